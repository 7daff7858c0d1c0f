import type { Finding } from '../types.js';
import { allocatedPod, allocationOf, blockFinder } from './blocks.js';
import { affineNode, type CalicoView } from './types.js';

// Seed 004: a pod uses an address of a block affine to another node, and that node's blackhole route for the block
// swallows its traffic. Reported on both nodes involved: each one's routing is part of it.
export function detectIpConflicts(view: CalicoView, node: string): Finding[] {
  const findings: Finding[] = [];
  const blockOf = blockFinder(view.blocks);
  for (const [ip, user] of view.podIps) {
    const block = blockOf(ip);
    const owner = block ? affineNode(block) : undefined;
    if (!block || !owner || owner === user.node) continue;
    if (owner !== node && user.node !== node) continue;
    const allocation = allocationOf(block, ip);
    const recorded = allocation ? allocatedPod(allocation.attribute) : undefined;
    const recordedNode = allocation?.attribute.secondary?.node;
    // A borrow (strictAffinity false) is recorded in the lender's block under this pod and node, and the borrower's
    // /32 route beats the lender's blackhole; an address the block does not record for this pod has neither.
    if (recorded === user.pod && (!recordedNode || recordedNode === user.node)) continue;
    const gone = !view.nodes.has(owner);
    findings.push({
      class: 'calico-ip-conflict',
      severity: 'leak',
      message: `${ip} of pod ${user.pod} on ${user.node} lies in block ${block.spec.cidr}, affine to ${owner}${gone ? ' (no longer a node)' : ''}, which records it ${recorded ? `for ${recorded}${recordedNode ? ` on ${recordedNode}` : ''}` : 'as free'}: ${gone ? 'Calico may hand it out again' : `${owner}'s blackhole route for the block swallows its traffic`}`,
      evidence: { ip, pod: user.pod, podNode: user.node, blockNode: owner, block: block.metadata.name, cidr: block.spec.cidr, recordedFor: recorded ?? null },
    });
  }
  return findings;
}
