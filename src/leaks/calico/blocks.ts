import { canonicalCidr, ordinalIn, subnetOf } from '../../node/cni/host-local.js';
import type { AllocationAttribute, IpamBlock } from './types.js';

/** Finds the block (or affinity) an address lies in: one lookup per block size in use, not one match per block. */
export function blockFinder<T extends { spec: { cidr: string } }>(blocks: T[]): (ip: string) => T | undefined {
  const byCidr = new Map<string, T>();
  const sizes = new Set<number>();
  for (const block of blocks) {
    const cidr = canonicalCidr(block.spec.cidr);
    if (!cidr) continue;
    byCidr.set(cidr, block);
    sizes.add(Number(cidr.split('/')[1]));
  }
  return (ip) => {
    for (const bits of sizes) {
      const cidr = subnetOf(ip, bits);
      const block = cidr === undefined ? undefined : byCidr.get(cidr);
      if (block) return block;
    }
    return undefined;
  };
}

/** What the block records for an address: the allocation's attributes, or undefined when it is not allocated. */
export function allocationOf(block: IpamBlock, ip: string): { ordinal: number; attribute: AllocationAttribute } | undefined {
  const ordinal = ordinalIn(block.spec.cidr, ip);
  const index = ordinal === undefined ? undefined : block.spec.allocations[ordinal];
  if (ordinal === undefined || index === null || index === undefined) return undefined;
  return { ordinal, attribute: block.spec.attributes[index] ?? {} };
}

/** The pod an allocation names ("namespace/name"), from the attributes Calico's CNI plugin writes. */
export function allocatedPod(attribute: AllocationAttribute): string | undefined {
  const s = attribute.secondary;
  return s?.namespace && s.pod ? `${s.namespace}/${s.pod}` : undefined;
}
