import type { Liveness } from '../liveness.js';
import { allocatedPod, allocationOf, blockFinder } from './blocks.js';
import { affineNode, type CalicoView } from './types.js';

// The proof before uncordon on a calico-ipam node: the smoke pod's address as calico-ipam itself recorded it.
/** Calico's CNI plugin names an allocation's handle after the sandbox: k8s-pod-network.<container id>. */
const HANDLE_PREFIX = 'k8s-pod-network.';

export interface CalicoAllocation {
  cidr: string;
  /** The node the block is affine to; another than the pod's node when the address is borrowed. */
  blockNode: string | undefined;
  borrowed: boolean;
  handle: string;
  sandboxId: string;
}

/** The allocation of `ip` in its block when it names `podRef` and a live sandbox of the node; else undefined. */
export function liveCalicoAllocation(view: CalicoView, live: Liveness, node: string, podRef: string, ip: string): CalicoAllocation | undefined {
  const block = blockFinder(view.blocks)(ip);
  const allocation = block && allocationOf(block, ip);
  if (!block || !allocation || allocatedPod(allocation.attribute) !== podRef) return undefined;
  const handle = allocation.attribute.handle_id ?? '';
  const sandboxId = handle.startsWith(HANDLE_PREFIX) ? handle.slice(HANDLE_PREFIX.length) : '';
  if (!live.sandboxIds.has(sandboxId)) return undefined;
  const blockNode = affineNode(block);
  return { cidr: block.spec.cidr, blockNode, borrowed: blockNode !== node, handle, sandboxId };
}

/** Whether `ip`'s block still records it for `podRef` (a DEL that released by handle leaves it free or another's). */
export function stillAllocatedTo(view: CalicoView, podRef: string, ip: string): boolean {
  const block = blockFinder(view.blocks)(ip);
  const allocation = block && allocationOf(block, ip);
  return Boolean(allocation && allocatedPod(allocation.attribute) === podRef);
}

export const describeCalicoAllocation = (a: CalicoAllocation, node: string) =>
  `allocated by calico-ipam in block ${a.cidr} ${a.borrowed ? `BORROWED from ${a.blockNode ?? 'no node'} (not affine to ${node}: its blocks were full or none was free)` : `affine to ${node}`} to live sandbox ${a.sandboxId.slice(0, 12)} (handle ${a.handle})`;
