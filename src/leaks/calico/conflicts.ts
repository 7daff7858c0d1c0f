import { routeFor, type Route } from '../../node/cni/routes.js';
import type { Finding } from '../types.js';
import { allocatedPod, allocationOf, blockFinder } from './blocks.js';
import { affineNode, type CalicoView, type IpamBlock } from './types.js';

// Seed 004: a pod uses an address of a block affine to another node, and that node's blackhole route for the block
// swallows its traffic. Reported on both nodes involved: each one's routing is part of it. A borrow (strictAffinity
// false: the borrower's blocks were full) is recorded in the lender's block for the pod; it is a conflict only where
// the lender routes the address to its blackhole, which this node's audit reads in its own routing table (`routes`,
// undefined when it could not be read: then such a borrow is said unverified, never taken for reachable). A pod whose
// address its own node's block records as free (or for another pod) is one too: calico-ipam may hand it out again.
export function detectIpConflicts(view: CalicoView, node: string, routes: Route[] | undefined): { findings: Finding[]; unverifiable: string[] } {
  const findings: Finding[] = [];
  const unverifiable: string[] = [];
  const blockOf = blockFinder(view.blocks);
  for (const [ip, user] of view.podIps) {
    const block = blockOf(ip);
    const owner = block ? affineNode(block) : undefined;
    if (!block || !owner || (owner !== node && user.node !== node)) continue;
    const allocation = allocationOf(block, ip);
    const recorded = allocation ? allocatedPod(allocation.attribute) : undefined;
    const recordedNode = allocation?.attribute.secondary?.node;
    const evidence = { ip, pod: user.pod, podNode: user.node, blockNode: owner, block: block.metadata.name, cidr: block.spec.cidr, recordedFor: recorded ?? null };
    const says = `which records it ${recorded ? `for ${recorded}${recordedNode ? ` on ${recordedNode}` : ''}` : 'as free'}`;
    const recordedForUser = recorded === user.pod && (!recordedNode || recordedNode === user.node);
    if (owner === user.node) {
      // Its own node's block; a pod being deleted may already have given its address back.
      if (recordedForUser || user.terminating) continue;
      findings.push({ class: 'calico-ip-conflict', severity: 'leak', message: `${ip} of pod ${user.pod} on ${user.node} lies in its node's block ${block.spec.cidr}, ${says}: calico-ipam may hand it to another pod`, evidence });
    } else if (!recordedForUser) {
      const gone = !view.nodes.has(owner);
      findings.push({
        class: 'calico-ip-conflict',
        severity: 'leak',
        message: `${ip} of pod ${user.pod} on ${user.node} lies in block ${block.spec.cidr}, affine to ${owner}${gone ? ' (no longer a node)' : ''}, ${says}: ${gone ? 'Calico may hand it out again' : `${owner}'s blackhole route for the block swallows its traffic`}`,
        evidence,
      });
    } else if (owner === node) {
      const lent = judgeLentAddress(block, ip, user, node, routes, evidence);
      if (typeof lent === 'string') unverifiable.push(lent);
      else if (lent) findings.push(lent);
    }
  }
  return { findings, unverifiable };
}

/**
 * An address this node's block lends to a pod elsewhere: reachable from this node's pods only by a route more
 * specific than the block's blackhole (BGP's /32 to the borrower). A finding, nothing, or why it could not be judged.
 */
function judgeLentAddress(block: IpamBlock, ip: string, user: { pod: string; node: string }, node: string, routes: Route[] | undefined, evidence: Finding['evidence']): Finding | string | undefined {
  if (!routes) return `${ip} of block ${block.spec.cidr} is lent to pod ${user.pod} on ${user.node}, and ${node}'s routes could not be read: whether its pods reach it was not checked`;
  const route = routeFor(routes, ip);
  if (route?.type !== 'blackhole') return undefined;
  return {
    class: 'calico-ip-conflict',
    severity: 'leak',
    message: `${ip} of pod ${user.pod} on ${user.node} is borrowed from block ${block.spec.cidr}, affine to ${node}, whose route for it is \`${route.text}\`: ${node}'s pods cannot reach it`,
    evidence: { ...evidence, borrowed: true, route: route.text },
  };
}
