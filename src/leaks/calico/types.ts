import type { ObjectMeta } from '../../cluster/types.js';

// Calico IPAM in the Kubernetes datastore (crd.projectcalico.org/v1), as far as the audit reads it.
export interface BlockAffinity {
  metadata: ObjectMeta;
  spec: { state?: string; node: string; cidr: string; deleted?: string | boolean; type?: string };
}

export interface AllocationAttribute {
  handle_id?: string;
  secondary?: Record<string, string> | null;
}

export interface IpamBlock {
  metadata: ObjectMeta;
  spec: {
    cidr: string;
    affinity?: string | null;
    allocations: Array<number | null>;
    unallocated: number[];
    attributes: AllocationAttribute[];
    sequenceNumber?: number;
    sequenceNumberForAllocation?: Record<string, number>;
    deleted?: boolean;
    strictAffinity?: boolean;
  };
}

export interface IpamHandle {
  metadata: ObjectMeta;
  spec: { handleID: string; block: Record<string, number>; deleted?: boolean };
}

export interface CalicoView {
  affinities: BlockAffinity[];
  blocks: IpamBlock[];
  handles: IpamHandle[];
  nodes: Set<string>;
  /** pod IP -> {pod, node} for every pod in the cluster with an IP. */
  podIps: Map<string, { pod: string; node: string }>;
}

/** The i-th address of an IPv4 block. */
export function blockAddress(cidr: string, ordinal: number): string {
  const base = cidr.split('/')[0]!.split('.').reduce((acc, p) => acc * 256 + Number(p), 0) + ordinal;
  return [24, 16, 8, 0].map((shift) => Math.floor(base / 2 ** shift) % 256).join('.');
}

export const affineNode = (block: IpamBlock) => (block.spec.affinity?.startsWith('host:') ? block.spec.affinity.slice(5) : undefined);
