import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { evictWithinBudgets } from '../../../src/cluster/drain/budgeted.js';
import type { RunbookError } from '../../../src/errors.js';
import type { Pod, PodDisruptionBudget } from '../../../src/cluster/types.js';

// The API seam: one budget whose disruptionsAllowed the eviction API spends and a "disruption controller" gives back
// (`refill` at a time), each change sent on the watch, as the apiserver and the controller do. The real drain against
// a real budget is in test/integration/12-runbook-pdb.test.ts and bench/drain.mjs.
function budgetApi(allowed: number, refill: { every: number; upTo: number } | null) {
  let rv = 1;
  const budget = (): PodDisruptionBudget => ({ metadata: { name: 'web', namespace: 'ns', resourceVersion: String(rv) }, spec: { selector: { matchLabels: { app: 'web' } } }, status: { disruptionsAllowed: allowed } });
  const listeners = new Set<(type: string, b: PodDisruptionBudget) => void>();
  const changed = () => {
    rv++;
    for (const l of listeners) l('MODIFIED', budget());
  };
  const stats = { accepted: 0, refused: 0, read: new Set<string>() };
  const timer = refill ? setInterval(() => ((allowed = refill.upTo), changed()), refill.every) : undefined;
  const cluster = {
    async get(path: string) {
      stats.read.add(path);
      return { metadata: { resourceVersion: String(rv) }, items: [budget()] };
    },
    async request() {
      if (allowed <= 0) {
        stats.refused++;
        throw new ApiError(429, 'TooManyRequests', 'Cannot evict pod as it would violate the pod\'s disruption budget.');
      }
      allowed--;
      stats.accepted++;
      changed();
      return {};
    },
    watch(path: string, onEvent: (type: string, b: PodDisruptionBudget) => void) {
      stats.read.add(path.split('?')[0]!);
      listeners.add(onEvent);
      let end = () => undefined as void;
      const done = new Promise<void>((resolve) => (end = resolve));
      return { done, stop: () => (listeners.delete(onEvent), end()) };
    },
  };
  return { cluster: cluster as unknown as Cluster, stats, stop: () => clearInterval(timer) };
}

const pods = (n: number): Pod[] =>
  Array.from({ length: n }, (_, i) => ({ metadata: { name: `web-${i}`, namespace: 'ns', uid: `u${i}`, labels: { app: 'web' } }, spec: {}, status: { conditions: [{ type: 'Ready', status: 'True' }] } }));
const options = (ms: number) => ({ gracePeriodSeconds: 5, deadline: Date.now() + ms, version: 'policy/v1' as const, retryDelayMs: 10, maxRetryDelayMs: 20 });

describe('evictions paced by the budget', () => {
  it('evicts as many as the budget allows each time it allows them, with few refusals', async () => {
    const api = budgetApi(2, { every: 300, upTo: 2 });
    try {
      await evictWithinBudgets(api.cluster, pods(10), options(20_000));
      // The budgets of the pods' namespace only, listed and watched: never the cluster's.
      expect([...api.stats.read]).toEqual(['/apis/policy/v1/namespaces/ns/poddisruptionbudgets']);
    } finally {
      api.stop();
    }
    expect(api.stats.accepted).toBe(10);
    // A refusal only where the budget changed under a batch; a timer-driven retry of each pod would refuse dozens.
    expect(api.stats.refused).toBeLessThanOrEqual(4);
  });

  it('a stop while the budget allows nothing ends the wait at once, said as a stop (issue 36: it waited to --timeout)', async () => {
    const api = budgetApi(0, null);
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error('SIGINT')), 300);
    const t0 = Date.now();
    const error = await evictWithinBudgets(api.cluster, pods(2), { ...options(600_000), signal: stop.signal }).catch((e: unknown) => e as RunbookError);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(error).toMatchObject({ code: 'stopped' });
    expect((error as Error).message).toMatch(/it gave up waiting for PodDisruptionBudget ns\/web \(2 pod\(s\) not evicted\)/);
    expect(api.stats.accepted).toBe(0);
  });

  it('a budget that never allows: times out at the deadline naming every pod left', async () => {
    const api = budgetApi(0, null);
    await expect(evictWithinBudgets(api.cluster, pods(2), options(1_500))).rejects.toThrow(/pods\/web-0 -n ns: global timeout reached: its PodDisruptionBudget ns\/web allowed no disruption in time; .*pods\/web-1/);
    expect(api.stats.accepted).toBe(0);
  });
});
