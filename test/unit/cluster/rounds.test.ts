import { describe, expect, it } from 'vitest';
import { drainInRounds, MAX_DRAIN_ROUNDS, type DrainRounds } from '../../../src/cluster/drain/rounds.js';
import type { DrainPlanView } from '../../../src/cluster/drain/plan.js';
import type { Pod } from '../../../src/cluster/types.js';

// The seam: what a fresh list of the node's pods says after each round. The real race (a pod bound after the cordon)
// is in test/integration/12-runbook-pdb.test.ts.
const pod = (name: string): Pod => ({ metadata: { name, namespace: 'ns', uid: name }, spec: {}, status: {} });
const view = (evict: Pod[], refused?: string): DrainPlanView => ({ verdicts: [], evict, waitFor: [], skipped: [], ...(refused ? { refused } : {}) });

function node(lists: DrainPlanView[]) {
  const log: string[] = [];
  const deps: DrainRounds = {
    plan: async () => lists.shift() ?? view([]),
    evict: async (pods) => void log.push(`evict ${pods.map((p) => p.metadata.name).join(',')}`),
    waitGone: async (pods) => void log.push(`wait ${pods.map((p) => p.metadata.name).join(',')}`),
    onLate: (pods, round) => void log.push(`late ${pods.map((p) => p.metadata.name).join(',')} round ${round}`),
  };
  return { deps, log };
}

describe('the drain in rounds', () => {
  it('ends after one round when a fresh list finds nothing', async () => {
    const { deps, log } = node([view([])]);
    expect((await drainInRounds(view([pod('a')]), deps)).map((p) => p.metadata.name)).toEqual(['a']);
    expect(log).toEqual(['evict a', 'wait a']);
  });

  it('drains a pod bound to the node after the cordon, and says so', async () => {
    const { deps, log } = node([view([pod('late')]), view([])]);
    expect((await drainInRounds(view([pod('a')]), deps)).map((p) => p.metadata.name)).toEqual(['a', 'late']);
    expect(log).toEqual(['evict a', 'wait a', 'late late round 2', 'evict late', 'wait late']);
  });

  it('fails, naming the pod, when a late pod cannot be drained with these flags', async () => {
    const { deps } = node([view([], 'cannot delete Pods that declare no controller (use --force to override): ns/bare')]);
    await expect(drainInRounds(view([pod('a')]), deps)).rejects.toThrow(/after the cordon cannot be drained: .*ns\/bare/);
  });

  it('gives up after a bounded number of rounds when pods keep arriving', async () => {
    const { deps, log } = node(Array.from({ length: 10 }, (_, i) => view([pod(`p${i}`)])));
    await expect(drainInRounds(view([pod('a')]), deps)).rejects.toThrow(new RegExp(`keep arriving .* after ${MAX_DRAIN_ROUNDS} rounds: ns/p${MAX_DRAIN_ROUNDS - 1}`));
    expect(log.filter((l) => l.startsWith('evict'))).toHaveLength(MAX_DRAIN_ROUNDS);
  });
});
