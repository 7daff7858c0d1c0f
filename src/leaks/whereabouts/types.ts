import type { ObjectMeta } from '../../cluster/types.js';

// whereabouts keeps its allocations in the API (whereabouts.cni.cncf.io/v1alpha1), one IPPool per range, cluster-wide:
// a pod IP is an entry of spec.allocations keyed by its offset from the range's first address.
export interface IpPool {
  metadata: ObjectMeta;
  spec: { range: string; allocations?: Record<string, { id: string; podref?: string; ifname?: string }> | null };
}

/** The cluster-wide reservation of an IP (enable_overlapping_ranges, the default), named after the IP. */
export interface OverlappingRangeIpReservation {
  metadata: ObjectMeta;
  spec: { containerid?: string; podref: string; ifname?: string };
}

/** One allocation, flattened out of its pool. */
export interface WhereaboutsAllocation {
  pool: string;
  namespace: string;
  range: string;
  offset: string;
  ip: string;
  containerId: string;
  /** namespace/name of its pod; '' when whereabouts recorded none (older versions, ADDs without K8S_POD_* arguments). */
  podRef: string;
  ifName: string;
  resourceVersion: string;
}

/** What the audit reads of whereabouts: the allocations of the node's ranges, and which pods the cluster has. */
export interface WhereaboutsView {
  /** The ranges of the node's whereabouts networks (as their configs write them). */
  ranges: string[];
  allocations: WhereaboutsAllocation[];
  /**
   * Only in the cluster-wide scope: namespace/name of every pod of the cluster, read after the allocations (so a new
   * pod's allocation meets its pod). Without it, allocations of pods bound elsewhere or gone are not judged.
   */
  pods?: Set<string>;
}
