import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { findingKey, planReclaim, planLines } from '../../../src/leaks/reclaim/plan.js';
import type { Finding } from '../../../src/leaks/types.js';
import { POOL_WRITE_BASIS, whereaboutsAges } from '../../../src/leaks/whereabouts/ages.js';
import { emptyState } from './state-builder.js';

// What holds a whereabouts release back for --grace: the address's reservation (made as whereabouts allocates), else
// its pool's last write, never older than the allocation; a pool gone has no age, an API error stops the reclaim.
const leak = (ip: string, containerId: string): Finding => ({
  class: 'whereabouts-ip-leaked',
  severity: 'leak',
  message: `${ip} in whereabouts pool kube-system/10.210.0.0-16 is allocated to demo/p (container ${containerId})`,
  evidence: { ip, pod: 'demo/p', containerId, pool: '10.210.0.0-16', namespace: 'kube-system', range: '10.210.0.0/16', offset: '5' },
});
const now = Date.parse('2026-12-02T12:00:00Z');
const ago = (s: number) => new Date(now - s * 1000).toISOString();
const pool = { metadata: { name: '10.210.0.0-16', namespace: 'kube-system', managedFields: [{ manager: 'whereabouts', time: ago(10) }, { manager: 'x', time: ago(400) }] }, spec: { range: '10.210.0.0/16', allocations: {} } };
const cluster = (answer: (path: string) => unknown) => ({ get: async (path: string) => answer(path) }) as unknown as Cluster;

describe("whereabouts allocations' ages", () => {
  it("by the reservation that names the container; else by the pool's last write, said so; none for a pool gone", async () => {
    const [withReservation, foreignReservation, noReservation] = [leak('10.210.0.5', 'aaa'), leak('10.210.0.6', 'bbb'), leak('10.210.0.7', 'ccc')];
    let poolReads = 0;
    const { ages, basis } = await whereaboutsAges(cluster((path) => {
      if (path.endsWith('/ippools/10.210.0.0-16')) return (poolReads++, pool);
      if (path.endsWith('/10.210.0.5')) return { metadata: { name: '10.210.0.5', creationTimestamp: ago(300) }, spec: { containerid: 'aaa', podref: 'demo/p' } };
      if (path.endsWith('/10.210.0.6')) return { metadata: { name: '10.210.0.6', creationTimestamp: ago(300) }, spec: { containerid: 'other', podref: 'demo/q' } };
      throw new ApiError(404, 'NotFound', 'not found');
    }), [withReservation, foreignReservation, noReservation], now);
    expect([ages.get(findingKey(withReservation)), ages.get(findingKey(foreignReservation)), ages.get(findingKey(noReservation))]).toEqual([300, 10, 10]);
    expect([...basis.keys()]).toEqual([findingKey(foreignReservation), findingKey(noReservation)]);
    expect(poolReads).toBe(1);
    const gone = await whereaboutsAges(cluster(() => {
      throw new ApiError(404, 'NotFound', 'not found');
    }), [withReservation], now);
    expect(gone.ages.size).toBe(0);
    await expect(whereaboutsAges(cluster(() => {
      throw new ApiError(403, 'Forbidden', 'cannot get ippools');
    }), [withReservation], now)).rejects.toThrow(/cannot get ippools/);
  });

  it('a young allocation is left alone, with the basis of its age and when it is releasable; an old one is released', () => {
    const f = leak('10.210.0.7', 'ccc');
    const plan = (age: number) => planReclaim({ first: [f], second: [f], unverifiable: [], state: emptyState(), graceSeconds: 120, apiAges: new Map([[findingKey(f), age]]), ageBasis: new Map([[findingKey(f), POOL_WRITE_BASIS]]) });
    expect(planLines(plan(10))).toEqual([`left alone: whereabouts-ip-leaked: ${f.message} (younger than --grace 120s (10s old, by ${POOL_WRITE_BASIS}): releasable in 110s)`]);
    expect(plan(130).whereabouts).toEqual([f]);
  });
});
