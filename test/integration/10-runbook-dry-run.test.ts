import { beforeAll, describe, expect, it } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { bed, DRAIN_FLAGS, upgradeNode } from './bed.js';
import { stepLine } from './faults.js';
import { nodeFingerprint, pinnedDeployment } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

describe('upgrade-node --dry-run', () => {
  const [t] = useNodes('docker');
  const ns = useNamespace();
  beforeAll(async () => {
    await pinnedDeployment(ns.name, 'app', t.name, 2);
  });

  it('plans every step and changes nothing: files, processes and API objects compared', async () => {
    const b = bed();
    const before = await nodeFingerprint(t);
    const result = await upgradeNode([t.name, '--to', `containerd=${b.containerd.new}`, '--dry-run', '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.result).toBe('planned');
    expect(report.steps.map((s: any) => s.status)).toEqual(Array(STEPS.length).fill('planned'));
    const step = (name: string) => report.steps.find((s: any) => s.name === name);
    expect(step('drain').detail.evict.length).toBe(2);
    expect(step('teardown-sandboxes').detail.sandboxes.length).toBeGreaterThan(0);
    expect(step('clear-state').detail.files.some((f: string) => f.startsWith('/var/lib/cni/networks/kubenet/'))).toBe(true);
    expect(step('upgrade-runtime').actions).toContain(`install containerd ${b.containerd.old} -> ${b.containerd.new}`);
    expect(step('prove-node').actions[0]).toMatch(new RegExp(`^start smoke pod kube-system/node-maint-smoke-\\w+ on ${t.name}`));
    expect(await nodeFingerprint(t)).toEqual(before);
  });

  it('prints a readable plan without --output json', async () => {
    const b = bed();
    const result = await upgradeNode([t.name, '--to', `containerd=${b.containerd.new}`, '--dry-run', ...DRAIN_FLAGS, ...t.flags]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Dry run \\(nothing changed\\) on node ${t.name}: planned`));
    expect(result.stdout).toContain(`containerd: ${b.containerd.old} -> ${b.containerd.new} (planned)`);
    expect(result.stderr).toContain(stepLine('teardown-sandboxes'));
  });
});
