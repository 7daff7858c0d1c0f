import { addressAt } from '../../node/cni/host-local.js';
import type { Route } from '../../node/cni/routes.js';
import type { Finding } from '../types.js';
import { allocatedPod } from './blocks.js';
import { detectIpConflicts } from './conflicts.js';
import { blockUsage } from './usage.js';
import { affineNode, type BlockAffinity, type CalicoFindings, type CalicoView, type IpamHandle } from './types.js';

// Leak class 6: Calico IPAM in the Kubernetes datastore. Pure, over one read of the CRDs and the pods.
// A node's findings are the addresses of its blocks and the pods on it; what no one node owns (affinities of removed
// nodes, handles with no IP) is cluster-wide: judged only from the whole view, and it fails no node's audit. `routes`
// is the node's routing table (undefined: not read), for the addresses its blocks lend to pods elsewhere.
export function detectCalicoLeaks(view: CalicoView, node: string, routes?: Route[]): CalicoFindings {
  const conflicts = detectIpConflicts(view, node, routes);
  const leaked = detectLeakedIps(view, node);
  return {
    node: [...leaked, ...conflicts.findings],
    blocks: blockUsage(view, node, leaked),
    cluster: view.whole
      ? [...removedNodesIps(view), ...detectOrphanAffinities(view, view.whole.affinities), ...detectLeakedHandles(view, view.whole.handles)]
      : [],
    unverifiable: conflicts.unverifiable,
  };
}

/** Addresses of blocks of nodes that are gone (no node's audit reads them), allocated to pods that do not hold them. */
const removedNodesIps = (view: CalicoView) =>
  [...new Set(view.blocks.map(affineNode).filter((n): n is string => n !== undefined && !view.nodes.has(n)))].flatMap((gone) => detectLeakedIps(view, gone));

/** Addresses of this node's blocks allocated to a pod that does not hold them. */
function detectLeakedIps(view: CalicoView, node: string): Finding[] {
  const findings: Finding[] = [];
  for (const block of view.blocks) {
    if (affineNode(block) !== node) continue;
    block.spec.allocations.forEach((attrIndex, ordinal) => {
      if (attrIndex === null || attrIndex === undefined) return;
      const attr = block.spec.attributes[attrIndex];
      const pod = attr ? allocatedPod(attr) : undefined;
      const ip = addressAt(block.spec.cidr, ordinal);
      // Tunnel addresses name no pod; an ordinal outside the block is an invalid block, not a leak to release.
      if (!pod || ip === undefined) return;
      const user = view.podIps.get(ip);
      if (user?.pod === pod) return;
      if (!user && waitingForItsAddress(view, pod, attr?.secondary?.node)) return;
      findings.push({
        class: 'calico-ip-leaked',
        severity: 'leak',
        message: `${ip} in block ${block.spec.cidr} (affine to ${node}) is allocated to ${pod}, which ${user ? `does not hold it (${user.pod} does)` : 'no longer has it'}`,
        evidence: { ip, pod, block: block.metadata.name, cidr: block.spec.cidr, handle: attr?.handle_id, ordinal, sequence: block.spec.sequenceNumberForAllocation?.[String(ordinal)], resourceVersion: block.metadata.resourceVersion },
      });
    });
  }
  return findings;
}

/** The pod exists, on the node the allocation names, and waits for its address to be posted: the allocation is its. */
function waitingForItsAddress(view: CalicoView, pod: string, allocatedFor: string | undefined): boolean {
  const on = view.waiting?.get(pod);
  return on !== undefined && (!allocatedFor || allocatedFor === on);
}

function detectOrphanAffinities(view: CalicoView, affinities: BlockAffinity[]): Finding[] {
  return affinities
    .filter((a) => !view.nodes.has(a.spec.node))
    .map((a) => {
      const block = view.blocks.find((b) => b.spec.cidr === a.spec.cidr);
      const used = block ? block.spec.allocations.filter((x) => x !== null && x !== undefined).length : 0;
      return {
        class: 'calico-affinity-orphan' as const,
        severity: 'leak' as const,
        message: `block affinity ${a.metadata.name}: ${a.spec.cidr} is affine to ${a.spec.node}, which is no longer a node (${used} allocation(s) left in the block)`,
        evidence: { affinity: a.metadata.name, node: a.spec.node, cidr: a.spec.cidr, allocations: used, resourceVersion: a.metadata.resourceVersion },
      };
    });
}

function detectLeakedHandles(view: CalicoView, handles: IpamHandle[]): Finding[] {
  const referenced = new Set<string>();
  for (const block of view.blocks) {
    for (const attrIndex of block.spec.allocations) {
      const handle = attrIndex === null || attrIndex === undefined ? undefined : block.spec.attributes[attrIndex]?.handle_id;
      if (handle) referenced.add(handle.toLowerCase());
    }
  }
  return handles
    .filter((h) => !(Object.values(h.spec.block ?? {}).reduce((n, c) => n + c, 0) > 0 && referenced.has(h.spec.handleID.toLowerCase())))
    .map((h) => ({
      class: 'calico-handle-leaked' as const,
      severity: 'leak' as const,
      message: `IPAM handle ${h.spec.handleID} holds no IP in any block`,
      evidence: { handle: h.metadata.name, handleID: h.spec.handleID, uid: h.metadata.uid, resourceVersion: h.metadata.resourceVersion },
    }));
}
