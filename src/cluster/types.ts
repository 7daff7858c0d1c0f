// The API objects the runbook reads, as far as it reads them.
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<{ kind: string; name: string; uid: string; controller?: boolean; apiVersion: string }>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  creationTimestamp?: string;
  /** Who wrote which fields, and when (the API server keeps it on every object written since Kubernetes 1.18). */
  managedFields?: Array<{ manager?: string; operation?: string; time?: string }>;
}

export interface Node {
  metadata: ObjectMeta;
  spec: { unschedulable?: boolean; podCIDR?: string; podCIDRs?: string[]; taints?: Array<{ key: string; value?: string; effect: string }> };
  status?: {
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string; lastHeartbeatTime?: string }>;
    nodeInfo?: { containerRuntimeVersion?: string; kubeletVersion?: string };
    addresses?: Array<{ type: string; address: string }>;
  };
}

export interface NodeSelectorTerm {
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
  matchFields?: Array<{ key: string; operator: string; values?: string[] }>;
}

export interface Pod {
  metadata: ObjectMeta;
  spec: {
    nodeName?: string;
    hostNetwork?: boolean;
    volumes?: Array<{ name: string; emptyDir?: unknown }>;
    terminationGracePeriodSeconds?: number;
    nodeSelector?: Record<string, string>;
    affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } } };
    tolerations?: Array<{ key?: string; operator?: string; effect?: string }>;
  };
  status?: {
    phase?: string;
    podIP?: string;
    podIPs?: Array<{ ip: string }>;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; containerID?: string; state?: Record<string, unknown> }>;
  };
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
}

export interface PodDisruptionBudget {
  metadata: ObjectMeta;
  spec: { selector?: LabelSelector; minAvailable?: number | string; maxUnavailable?: number | string; unhealthyPodEvictionPolicy?: string };
  status?: { disruptionsAllowed?: number; currentHealthy?: number; desiredHealthy?: number; expectedPods?: number };
}

export interface Lease {
  metadata: ObjectMeta;
  spec: { holderIdentity?: string | null; leaseDurationSeconds?: number; acquireTime?: string | null; renewTime?: string | null; leaseTransitions?: number };
}

export interface ConfigMap {
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

export interface List<T> {
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}
