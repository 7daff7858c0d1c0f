import type { Cluster } from './api.js';
import { listAll } from './list.js';
import type { Pod } from './types.js';

/** The node's pods, by field selector: never the whole cluster's. */
export async function listPodsOnNode(cluster: Cluster, node: string): Promise<Pod[]> {
  return listAll<Pod>(cluster, `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`);
}

export const podKey = (pod: Pod) => `${pod.metadata.namespace}/${pod.metadata.name}`;

export function isPodReady(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export function isTerminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

export function podIps(pod: Pod): string[] {
  const ips = pod.status?.podIPs?.map((p) => p.ip) ?? [];
  if (pod.status?.podIP && !ips.includes(pod.status.podIP)) ips.push(pod.status.podIP);
  return ips;
}

/**
 * What a cluster-wide view reads of a pod (its name, node, IPs, phase, whether it is a static control-plane pod), for
 * lists of every pod: a full pod is kilobytes (containers, managed fields), and a big cluster has 100k of them.
 */
export function slimPod(pod: Pod): Pod {
  const { name, namespace, uid, labels, annotations, deletionTimestamp, ownerReferences } = pod.metadata;
  const mirror = annotations?.['kubernetes.io/config.mirror'];
  return {
    metadata: { name, namespace, uid, deletionTimestamp, ownerReferences, ...(labels?.component ? { labels: { component: labels.component } } : {}), ...(mirror !== undefined ? { annotations: { 'kubernetes.io/config.mirror': mirror } } : {}) },
    spec: { nodeName: pod.spec.nodeName, hostNetwork: pod.spec.hostNetwork },
    status: { phase: pod.status?.phase, podIP: pod.status?.podIP, podIPs: pod.status?.podIPs },
  };
}
