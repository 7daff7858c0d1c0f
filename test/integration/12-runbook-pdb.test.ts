import { beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, DRAIN_FLAGS, kubectlJson, upgradeNode, waitFor } from './bed.js';
import { deployment, nodeFingerprint, waitForRunning } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

describe('a drain blocked by a PodDisruptionBudget', () => {
  const [t] = useNodes('docker');
  const ns = useNamespace();
  beforeAll(async () => {
    // A ledger whose budget allows no disruption, on the node.
    await applyObjects([
      deployment(ns.name, 'ledger', t.name, 1),
      { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'ledger', namespace: ns.name }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'ledger' } } } },
    ]);
    await waitForRunning(ns.name, 'app=ledger', 1);
    await waitFor(async () => (await kubectlJson('get', 'pdb', '-n', ns.name, 'ledger')).status?.currentHealthy === 1, 60_000, 'the ledger budget to see its pod');
  });

  it('is caught in preflight, naming the pod and the budget, before the node is cordoned', async () => {
    const before = await nodeFingerprint(t);
    const result = await upgradeNode([t.name, '--to', `containerd=${bed().containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
    expect(result.code, result.stderr).toBe(8);
    const report = JSON.parse(result.stdout);
    expect(report.error.message).toMatch(new RegExp(`${ns.name}/ledger-[a-z0-9-]+ \\(${ns.name}/ledger: its PodDisruptionBudget allows no disruption\\)`));
    expect(report.steps.find((s: any) => s.name === 'cordon').status).toBe('not-run');
    expect(await nodeFingerprint(t)).toEqual(before);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
  });
});
