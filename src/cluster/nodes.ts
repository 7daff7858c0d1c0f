import { RunbookError } from '../errors.js';
import { isConflict, isNotFound, type Cluster } from './api.js';
import type { Node, Pod } from './types.js';

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

/** When kubelet last posted the Ready condition (ms since the epoch, kubelet's clock), or undefined. */
export function readyPostedAt(node: Node): number | undefined {
  const at = node.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime;
  return at ? Date.parse(at) : undefined;
}

export function readyMessage(node: Node): string {
  const c = node.status?.conditions?.find((x) => x.type === 'Ready');
  return c ? `${c.status}${c.reason ? ` (${c.reason}: ${c.message ?? ''})` : ''}` : 'unknown';
}

export function podCidr(node: Node): string | undefined {
  return node.spec.podCIDR || node.spec.podCIDRs?.[0];
}

/**
 * Changes the node's spec by a merge patch (nothing else of the node is touched), conditional on the resourceVersion
 * read just before it: a patch decided on a stale view, or held up in the network past a Lease takeover after which the
 * node changed, is refused (409) and decided again on a fresh read, behind the fence again. `specFor` says the change
 * for the node as read, or undefined when there is none to make. Returns the node as it is.
 */
export async function patchNodeSpec(cluster: Cluster, name: string, specFor: (node: Node) => Record<string, unknown> | undefined): Promise<Node> {
  for (let attempt = 1; ; attempt++) {
    const node = await getNode(cluster, name);
    const spec = specFor(node);
    if (spec === undefined) return node;
    try {
      return await cluster.mergePatch<Node>(`/api/v1/nodes/${encodeURIComponent(name)}`, { metadata: { resourceVersion: node.metadata.resourceVersion }, spec });
    } catch (e) {
      // kubelet's status updates change the resourceVersion too: a few conflicts are normal.
      if (!isConflict(e) || attempt >= 5) throw e;
    }
  }
}

/** Sets spec.unschedulable (patchNodeSpec). */
export const setUnschedulable = (cluster: Cluster, name: string, unschedulable: boolean): Promise<Node> =>
  patchNodeSpec(cluster, name, (node) => ((node.spec.unschedulable === true) === unschedulable ? undefined : { unschedulable: unschedulable ? true : null }));

const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];
const CONTROL_PLANE_COMPONENTS = new Set(['kube-apiserver', 'etcd', 'kube-controller-manager', 'kube-scheduler']);

/** Why the node is a control-plane node (its role label, or the static pods it runs), or undefined when it is not. */
export function isControlPlane(node: Node, pods: Pod[]): string | undefined {
  const label = CONTROL_PLANE_LABELS.find((l) => node.metadata.labels?.[l] !== undefined);
  if (label) return `label ${label}`;
  const statics = pods.filter((p) => p.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined && CONTROL_PLANE_COMPONENTS.has(p.metadata.labels?.component ?? ''));
  return statics.length > 0 ? `static pods ${statics.map((p) => p.metadata.name).join(', ')}` : undefined;
}
