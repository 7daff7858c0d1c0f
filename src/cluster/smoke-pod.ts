import { isNotFound, type Cluster } from './api.js';
import type { List, Pod } from './types.js';

// The smoke pod: one pod pinned to the node before it is uncordoned, to prove that the new runtime gives a pod a
// sandbox and an IP. Pinned by nodeName (no scheduler), tolerating the cordon, on the node's own sandbox image, and
// within Pod Security's restricted level (an agent's runs start it in a namespace that enforces it).
export const smokePodName = (runId: string) => `node-maint-smoke-${runId.slice(0, 8)}`;

export function smokePodManifest(options: { name: string; namespace: string; node: string; image: string; runId: string }): Pod & Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: options.name,
      namespace: options.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'node-maint', 'node-maint.io/smoke': 'true' },
      annotations: { 'node-maint.io/run': options.runId },
    },
    spec: {
      nodeName: options.node,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // The sandbox image's pause runs as any user: nobody's, with nothing it could escalate to.
      securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: 'RuntimeDefault' } },
      tolerations: [
        { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
      ],
      containers: [
        {
          name: 'smoke',
          image: options.image,
          imagePullPolicy: 'IfNotPresent',
          resources: { requests: { cpu: '1m', memory: '4Mi' } },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  } as Pod & Record<string, unknown>;
}

const podPath = (ns: string, name?: string) => `/api/v1/namespaces/${ns}/pods${name ? `/${name}` : ''}`;

export async function getPod(cluster: Cluster, namespace: string, name: string): Promise<Pod | undefined> {
  try {
    return await cluster.get<Pod>(podPath(namespace, name));
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

export async function createPod(cluster: Cluster, pod: Pod): Promise<Pod> {
  return cluster.request<Pod>('POST', podPath(pod.metadata.namespace!), pod);
}

/** Deletes the pod (kubelet terminates it: its network is torn down by the runtime); absent is fine. */
export async function deletePod(cluster: Cluster, namespace: string, name: string, gracePeriodSeconds = 1): Promise<void> {
  try {
    await cluster.request('DELETE', podPath(namespace, name), { gracePeriodSeconds });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

/** The last few event messages about a pod ("Failed to create pod sandbox: ..."), for the operator. */
export async function podEvents(cluster: Cluster, pod: Pod): Promise<string[]> {
  const selector = encodeURIComponent(`involvedObject.uid=${pod.metadata.uid}`);
  const events = await cluster.get<List<{ reason?: string; message?: string; lastTimestamp?: string }>>(`/api/v1/namespaces/${pod.metadata.namespace}/events?fieldSelector=${selector}`);
  return events.items.slice(-3).map((e) => `${e.reason ?? ''}: ${e.message ?? ''}`.trim());
}
