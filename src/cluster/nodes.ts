import { RunbookError } from '../runbook/errors.js';
import { isNotFound, type Cluster } from './api.js';
import type { Node } from './types.js';

export async function getNode(cluster: Cluster, name: string): Promise<Node> {
  try {
    return await cluster.get<Node>(`/api/v1/nodes/${encodeURIComponent(name)}`);
  } catch (e) {
    if (isNotFound(e)) throw new RunbookError('nodeNotFound', `node ${name} does not exist in the cluster at ${cluster.server}`);
    throw e;
  }
}

export function isReady(node: Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export function readyMessage(node: Node): string {
  const c = node.status?.conditions?.find((x) => x.type === 'Ready');
  return c ? `${c.status}${c.reason ? ` (${c.reason}: ${c.message ?? ''})` : ''}` : 'unknown';
}

export function podCidr(node: Node): string | undefined {
  return node.spec.podCIDR || node.spec.podCIDRs?.[0];
}

/** Sets spec.unschedulable; a merge patch, so nothing else of the node is touched. */
export async function setUnschedulable(cluster: Cluster, name: string, unschedulable: boolean): Promise<Node> {
  return cluster.mergePatch<Node>(`/api/v1/nodes/${encodeURIComponent(name)}`, { spec: { unschedulable: unschedulable ? true : null } });
}
