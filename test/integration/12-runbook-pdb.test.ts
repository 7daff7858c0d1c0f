import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, kubectl, kubectlJson, realNodeFingerprint, resetRealNode, sshFlags, upgradeNode, waitFor } from './bed.js';

describe('a drain blocked by a PodDisruptionBudget', () => {
  beforeAll(async () => {
    await resetRealNode();
    // The seeded "ledger" Deployment's budget allows no disruption; it runs only where node-maint.io/frozen=true.
    await kubectl('label', 'node', bed().realNode, 'node-maint.io/frozen=true', '--overwrite');
    await waitFor(async () => {
      const pods = await kubectlJson('get', 'pods', '-n', 'demo', '-l', 'app=ledger');
      return pods.items.some((p: any) => p.spec.nodeName === bed().realNode && p.status.phase === 'Running');
    }, 120_000, 'the ledger pod running on the real node');
    await waitFor(async () => (await kubectlJson('get', 'pdb', '-n', 'demo', 'ledger')).status?.currentHealthy === 1, 60_000, 'the ledger budget to see its pod');
  });

  afterAll(async () => {
    await kubectl('label', 'node', bed().realNode, 'node-maint.io/frozen-');
    await kubectl('-n', 'demo', 'delete', 'pod', '-l', 'app=ledger', '--wait=false');
  });

  it('is caught in preflight, naming the pod and the budget, before the node is cordoned', async () => {
    const b = bed();
    const before = await realNodeFingerprint();
    const result = await upgradeNode([b.realNode, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...sshFlags(b.realNode)]);
    expect(result.code, result.stderr).toBe(8);
    const report = JSON.parse(result.stdout);
    expect(report.error.message).toMatch(/demo\/ledger-[a-z0-9-]+ \(demo\/ledger: its PodDisruptionBudget allows no disruption\)/);
    expect(report.steps.find((s: any) => s.name === 'cordon').status).toBe('not-run');
    expect(await realNodeFingerprint()).toEqual(before);
    expect((await kubectlJson('get', 'node', b.realNode)).spec.unschedulable).toBeUndefined();
  });
});
