import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { calicoAges } from '../../../src/leaks/calico/ages.js';
import { findingKey } from '../../../src/leaks/reclaim/plan.js';
import type { Finding } from '../../../src/leaks/types.js';

// What holds a Calico release back for --grace: its object's age in the API; an object gone has none, and an API
// that cannot answer stops the reclaim before anything changes (never "old enough").
const ip: Finding = { class: 'calico-ip-leaked', severity: 'leak', message: 'ip', evidence: { ip: '10.0.0.1', handle: 'k8s-pod-network.ABC' } };
const affinity: Finding = { class: 'calico-affinity-orphan', severity: 'leak', message: 'aff', evidence: { affinity: 'gone-node-10-0-0-0-26' } };
const cluster = (answer: (path: string) => unknown) => ({ get: async (path: string) => answer(path) }) as unknown as Cluster;

describe("Calico records' ages", () => {
  it('reads the handle (by its object name) and the affinity; an object gone has no age', async () => {
    const asked: string[] = [];
    const made = new Date(Date.now() - 30_000).toISOString();
    const ages = await calicoAges(cluster((path) => {
      asked.push(path);
      if (path.endsWith('blockaffinities/gone-node-10-0-0-0-26')) throw new ApiError(404, 'NotFound', 'not found');
      return { metadata: { creationTimestamp: made } };
    }), [ip, affinity]);
    expect(asked).toEqual(['/apis/crd.projectcalico.org/v1/ipamhandles/k8s-pod-network.abc', '/apis/crd.projectcalico.org/v1/blockaffinities/gone-node-10-0-0-0-26']);
    expect(Math.round(ages.get(findingKey(ip))!)).toBe(30);
    expect(ages.has(findingKey(affinity))).toBe(false);
  });

  it('fails closed: an API error other than 404 stops the reclaim', async () => {
    await expect(calicoAges(cluster(() => {
      throw new ApiError(403, 'Forbidden', 'cannot get ipamhandles');
    }), [ip])).rejects.toThrow(/cannot get ipamhandles/);
  });
});
