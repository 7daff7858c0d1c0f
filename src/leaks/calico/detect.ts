import { cidrContains } from '../../node/cni/host-local.js';
import type { Finding } from '../types.js';
import { affineNode, blockAddress, type CalicoView } from './types.js';

// Leak class 6: Calico IPAM in the Kubernetes datastore, per node. Pure, over one read of the CRDs and the pods.
export function detectCalicoLeaks(view: CalicoView, node: string): Finding[] {
  const findings: Finding[] = [];
  const referencedHandles = new Set<string>();
  for (const block of view.blocks) {
    const owner = affineNode(block);
    block.spec.allocations.forEach((attrIndex, ordinal) => {
      if (attrIndex === null || attrIndex === undefined) return;
      const attr = block.spec.attributes[attrIndex];
      if (attr?.handle_id) referencedHandles.add(attr.handle_id.toLowerCase());
      const ip = blockAddress(block.spec.cidr, ordinal);
      const user = view.podIps.get(ip);
      const pod = attr?.secondary?.namespace && attr.secondary.pod ? `${attr.secondary.namespace}/${attr.secondary.pod}` : undefined;
      if (owner === node && pod && user?.pod !== pod) {
        findings.push({
          class: 'calico-ip-leaked',
          severity: 'leak',
          message: `${ip} in block ${block.spec.cidr} (affine to ${node}) is allocated to ${pod}, which ${user ? `does not hold it (${user.pod} does)` : 'no longer has it'}`,
          evidence: { ip, pod, block: block.metadata.name, cidr: block.spec.cidr, handle: attr?.handle_id, ordinal, resourceVersion: block.metadata.resourceVersion },
        });
      }
    });
    // The blackhole case: the block's owner routes the whole block to a blackhole, so a pod elsewhere using one of
    // its addresses is unreachable.
    const inBlock = cidrContains(block.spec.cidr);
    for (const [ip, user] of view.podIps) {
      if (!owner || user.node === owner || !inBlock(ip)) continue;
      if (owner !== node && user.node !== node) continue;
      findings.push({
        class: 'calico-ip-conflict',
        severity: 'leak',
        message: `${ip} of pod ${user.pod} on ${user.node} lies in block ${block.spec.cidr}, affine to ${owner}: ${owner}'s blackhole route for the block swallows its traffic`,
        evidence: { ip, pod: user.pod, podNode: user.node, blockNode: owner, block: block.metadata.name, cidr: block.spec.cidr },
      });
    }
  }
  for (const a of view.affinities) {
    if (view.nodes.has(a.spec.node)) continue;
    const block = view.blocks.find((b) => b.spec.cidr === a.spec.cidr);
    const used = block ? block.spec.allocations.filter((x) => x !== null && x !== undefined).length : 0;
    findings.push({
      class: 'calico-affinity-orphan',
      severity: 'leak',
      message: `block affinity ${a.metadata.name}: ${a.spec.cidr} is affine to ${a.spec.node}, which is no longer a node (${used} allocation(s) left in the block)`,
      evidence: { affinity: a.metadata.name, node: a.spec.node, cidr: a.spec.cidr, allocations: used, resourceVersion: a.metadata.resourceVersion },
    });
  }
  for (const h of view.handles) {
    const counted = Object.values(h.spec.block ?? {}).reduce((n, c) => n + c, 0);
    if (counted > 0 && referencedHandles.has(h.spec.handleID.toLowerCase())) continue;
    findings.push({
      class: 'calico-handle-leaked',
      severity: 'leak',
      message: `IPAM handle ${h.spec.handleID} holds no IP in any block`,
      evidence: { handle: h.metadata.name, handleID: h.spec.handleID, uid: h.metadata.uid, resourceVersion: h.metadata.resourceVersion },
    });
  }
  return findings;
}
