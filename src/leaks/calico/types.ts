import type { ObjectMeta } from '../../cluster/types.js';
import type { Finding } from '../types.js';

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

export const affineNode = (block: IpamBlock) => (block.spec.affinity?.startsWith('host:') ? block.spec.affinity.slice(5) : undefined);

/** What Calico's IPAM says about the cluster: findings of this node, and findings no one node owns. */
export interface CalicoFindings {
  node: Finding[];
  cluster: Finding[];
}
