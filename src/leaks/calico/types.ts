import type { ObjectMeta } from '../../cluster/types.js';
import type { Finding, MeasuredRange } from '../types.js';

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

/**
 * One read of Calico's IPAM. A node's view holds its own blocks, those its pods' addresses lie in, its pods and the
 * pods its blocks name; the whole view (audit-node --cluster-wide) every block, pod, affinity and handle.
 */
export interface CalicoView {
  blocks: IpamBlock[];
  /** Nodes known to exist (a node's view: this one and the owners of the blocks read). */
  nodes: Set<string>;
  /** pod IP -> {pod, node} for the pods read that have an IP; terminating: being deleted (its address may be given back). */
  podIps: Map<string, { pod: string; node: string; terminating?: boolean }>;
  /**
   * pod -> node for the pods read that are not terminal and have no address in their status yet: kubelet posts it
   * after the sandbox is made and the images are pulled (minutes for a large image), while calico-ipam allocated it
   * when the sandbox was made. Their allocations are live, not leaked.
   */
  waiting?: Map<string, string>;
  /** Only in the whole view: what no one node owns is judged from these. */
  whole?: { affinities: BlockAffinity[]; handles: IpamHandle[] };
}

export const affineNode = (block: IpamBlock) => (block.spec.affinity?.startsWith('host:') ? block.spec.affinity.slice(5) : undefined);

/** What Calico's IPAM says about the cluster: findings of this node, and findings no one node owns. */
export interface CalicoFindings {
  node: Finding[];
  cluster: Finding[];
  /** The node's blocks, counted as host-local's ranges are. */
  blocks?: MeasuredRange[];
  /** What could not be judged (a lent address while the node's routes were unread). */
  unverifiable?: string[];
}
