import type { Cluster } from './api.js';
import type { List, Pod } from './types.js';

export async function listPodsOnNode(cluster: Cluster, node: string): Promise<Pod[]> {
  const selector = encodeURIComponent(`spec.nodeName=${node}`);
  const list = await cluster.get<List<Pod>>(`/api/v1/pods?fieldSelector=${selector}&limit=5000`);
  return list.items;
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
