import { isNotFound, type Cluster } from '../../cluster/api.js';
import { findingKey } from '../reclaim/plan.js';
import type { Finding } from '../types.js';
import { WHEREABOUTS_GROUP } from './read.js';
import { reservationNames, reservationOf } from './release.js';
import type { IpPool } from './types.js';

export const POOL_WRITE_BASIS = "its pool's last write: whereabouts keeps no time per address, and this one has no reservation";

/**
 * Each leaked whereabouts allocation's age: its cluster-wide reservation's (whereabouts makes it as it allocates),
 * else, for a pool without one, the pool's last write, which is never older than the allocation (so never releases
 * early). None where the pool is gone (the release then finds it gone); any other API failure stops the reclaim.
 */
export async function whereaboutsAges(cluster: Cluster, findings: Finding[], now = Date.now()): Promise<{ ages: Map<string, number>; basis: Map<string, string> }> {
  const ages = new Map<string, number>();
  const basis = new Map<string, string>();
  // One read per pool, however many of its addresses leaked.
  const pools = new Map<string, Promise<IpPool | undefined>>();
  const poolAt = (path: string) => {
    if (!pools.has(path)) pools.set(path, cluster.get<IpPool>(path).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e))));
    return pools.get(path)!;
  };
  for (const f of findings.filter((x) => x.class === 'whereabouts-ip-leaked')) {
    const { namespace, pool, containerId, ip, pod } = f.evidence as Record<string, string>;
    const current = await poolAt(`${WHEREABOUTS_GROUP}/namespaces/${namespace}/ippools/${pool}`);
    if (!current) continue;
    const reservation = await reservationOf(cluster, current, String(ip));
    const made = reservation && reservationNames(reservation, containerId!, pod) ? reservation.metadata.creationTimestamp : undefined;
    const lastWrite = Math.max(0, ...(current.metadata.managedFields ?? []).map((m) => Date.parse(m.time ?? '') || 0));
    const since = made ? Date.parse(made) : lastWrite;
    // No time at all: as young as now, so held back for the whole grace (never "old enough" by default).
    ages.set(findingKey(f), since > 0 ? (now - since) / 1000 : 0);
    if (!made) basis.set(findingKey(f), POOL_WRITE_BASIS);
  }
  return { ages, basis };
}
