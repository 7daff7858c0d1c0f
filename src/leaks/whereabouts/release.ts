import { ApiError, isNotFound, type Cluster } from '../../cluster/api.js';
import type { Finding, ReleaseOutcome } from '../types.js';
import { WHEREABOUTS_GROUP } from './read.js';
import type { IpPool, OverlappingRangeIpReservation } from './types.js';

/**
 * Releases leaked whereabouts allocations as its own reconciler does, each change conditional on what the audit saw:
 * the pool's entry is removed by a JSON patch that first tests it still names the leaked container (a concurrent
 * allocation of that address makes the patch fail, nothing overwritten); then the address's cluster-wide reservation,
 * if it still names that container or pod, deleted with its uid and resourceVersion as preconditions.
 * `save` is handed each record before it is removed (the backup).
 */
export async function releaseWhereabouts(cluster: Cluster, findings: Finding[], save: (name: string, record: unknown) => Promise<void>): Promise<ReleaseOutcome[]> {
  const outcomes: ReleaseOutcome[] = [];
  for (const f of findings) {
    try {
      outcomes.push(await releaseAllocation(cluster, f, save));
    } catch (e) {
      // 422: the patch's test failed (the entry changed); 409/404: the reservation changed or went.
      const changed = e instanceof ApiError && [404, 409, 422].includes(e.status);
      outcomes.push({ finding: f, verdict: changed ? 'changed' : 'failed', detail: changed ? `${f.evidence.ip} changed since the audit; not touched (${(e as Error).message})` : (e as Error).message });
    }
  }
  return outcomes;
}

async function releaseAllocation(cluster: Cluster, f: Finding, save: (name: string, record: unknown) => Promise<void>): Promise<ReleaseOutcome> {
  const { namespace, pool, offset, containerId, ip, pod } = f.evidence as Record<string, string>;
  const poolPath = `${WHEREABOUTS_GROUP}/namespaces/${namespace}/ippools/${pool}`;
  const current = await cluster.get<IpPool>(poolPath);
  const entry = current.spec.allocations?.[offset!];
  if (!entry) return { finding: f, verdict: 'gone', detail: `${ip} in pool ${namespace}/${pool} already released since the audit` };
  if (entry.id !== containerId) return { finding: f, verdict: 'changed', detail: `${ip} in pool ${namespace}/${pool} no longer names container ${containerId!.slice(0, 12)}; not touched` };
  const reservation = await reservationOf(cluster, current, String(ip));
  const names = (r: OverlappingRangeIpReservation) => reservationNames(r, containerId!, pod);
  await save(`whereabouts-${namespace}-${pool}-${offset}.json`, { pool: { metadata: current.metadata, allocation: { [offset!]: entry } }, reservation });
  const escaped = offset!.replace(/~/g, '~0').replace(/\//g, '~1');
  try {
    await cluster.request('PATCH', poolPath, [
      { op: 'test', path: `/spec/allocations/${escaped}/id`, value: containerId },
      { op: 'remove', path: `/spec/allocations/${escaped}` },
    ], 'application/json-patch+json');
  } catch (e) {
    // The test failed: the entry went or changed between the read and the patch; said as what it is now.
    if (!(e instanceof ApiError && e.status === 422)) throw e;
    const now = (await cluster.get<IpPool>(poolPath)).spec.allocations?.[offset!];
    if (!now) return { finding: f, verdict: 'gone', detail: `${ip} in pool ${namespace}/${pool} released by someone else as this reclaim released it` };
    throw e;
  }
  let also = '';
  if (reservation && names(reservation)) {
    also = await cluster
      .request('DELETE', `${WHEREABOUTS_GROUP}/namespaces/${namespace}/overlappingrangeipreservations/${reservation.metadata.name}`, {
        preconditions: { uid: reservation.metadata.uid, resourceVersion: reservation.metadata.resourceVersion },
      })
      .then(
        () => ` and its reservation ${reservation.metadata.name}`,
        // The address is released either way: its reservation went, or was taken again, meanwhile (left as it is).
        (e: unknown) => (e instanceof ApiError && [404, 409].includes(e.status) ? `; its reservation ${reservation.metadata.name} changed meanwhile and was left as it is` : Promise.reject(e)),
      );
  }
  return { finding: f, verdict: 'freed', detail: `released ${ip} of ${pod} in whereabouts pool ${namespace}/${pool}${also}` };
}

/** By its container when it names one, else by its pod, never by a pod neither names (older whereabouts write none). */
export const reservationNames = (r: OverlappingRangeIpReservation, containerId: string, pod: string | undefined) =>
  r.spec.containerid ? r.spec.containerid === containerId : !!pod && r.spec.podref === pod;

/** The cluster-wide reservation of the address (named after it, with the network's name first when it has one). */
export async function reservationOf(cluster: Cluster, pool: IpPool, ip: string): Promise<OverlappingRangeIpReservation | undefined> {
  const name = ip.replace(/:/g, '-');
  // A pool named "NETWORK-RANGE" is a named network's: its reservations are "NETWORK-IP".
  const network = pool.metadata.name.endsWith(`-${pool.spec.range.replace(/[:/]/g, '-')}`) ? pool.metadata.name.slice(0, -(pool.spec.range.length + 1)) : '';
  try {
    return await cluster.get<OverlappingRangeIpReservation>(`${WHEREABOUTS_GROUP}/namespaces/${pool.metadata.namespace}/overlappingrangeipreservations/${network ? `${network}-${name}` : name}`);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
