import { isNotFound, type Cluster } from '../../cluster/api.js';
import { listAll } from '../../cluster/list.js';
import { servesGroup } from '../../cluster/groups.js';
import { podKey } from '../../cluster/pods.js';
import type { Pod } from '../../cluster/types.js';
import { addressAt } from '../../node/cni/host-local.js';
import type { IpamScope } from '../types.js';
import { poolRange } from './ranges.js';
import type { IpPool, WhereaboutsAllocation, WhereaboutsView } from './types.js';

export const WHEREABOUTS_GROUP = '/apis/whereabouts.cni.cncf.io/v1alpha1';

/** Whether the cluster serves whereabouts' CRD group. */
export const hasWhereabouts = (cluster: Cluster) => servesGroup(cluster, WHEREABOUTS_GROUP);

/** Each allocation of the pools over these ranges, with its address. */
export function allocationsOf(pools: IpPool[], ranges: string[]): WhereaboutsAllocation[] {
  return pools.flatMap((pool) => {
    const range = poolRange(pool.spec.range);
    if (!range || !ranges.includes(range)) return [];
    return Object.entries(pool.spec.allocations ?? {}).flatMap(([offset, a]) => {
      const ip = addressAt(range, Number(offset));
      if (ip === undefined) return [];
      const { name, namespace = '', resourceVersion = '' } = pool.metadata;
      return [{ pool: name, namespace, range, offset, ip, containerId: a.id ?? '', podRef: a.podref ?? '', ifName: a.ifname ?? '', resourceVersion }];
    });
  });
}

/**
 * The allocations of the node's whereabouts ranges (a pool is one object per range: read whole), then, only for the
 * cluster-wide scope and if some exist, the names of the cluster's pods, in that order: a pod made between the two
 * reads is in the second, so its new allocation is never taken for a gone pod's. undefined when the node has no
 * whereabouts network.
 */
export async function readWhereaboutsView(cluster: Cluster, ranges: string[], scope: IpamScope = 'node'): Promise<WhereaboutsView | undefined> {
  if (ranges.length === 0) return undefined;
  let pools: IpPool[];
  try {
    pools = await listAll<IpPool>(cluster, `${WHEREABOUTS_GROUP}/ippools`);
  } catch (e) {
    // The node's network names whereabouts, yet the cluster has no IPPools: whereabouts could not allocate at all.
    if (isNotFound(e)) throw new Error(`the node's CNI network uses whereabouts, but the cluster serves no ${WHEREABOUTS_GROUP}/ippools`);
    throw e;
  }
  const allocations = allocationsOf(pools, ranges);
  if (scope === 'node' || allocations.length === 0) return { ranges, allocations };
  return { ranges, allocations, pods: new Set(await listAll<Pod, string>(cluster, '/api/v1/pods', 500, podKey)) };
}
