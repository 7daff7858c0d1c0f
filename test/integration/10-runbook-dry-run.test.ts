import { beforeAll, describe, expect, it } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { bed, DRAIN_FLAGS, realNodeFingerprint, resetRealNode, sshFlags, upgradeNode } from './bed.js';

describe('upgrade-node --dry-run', () => {
  beforeAll(async () => {
    await resetRealNode();
  });

  it('plans every step and changes nothing: files, processes and API objects compared', async () => {
    const b = bed();
    const before = await realNodeFingerprint();
    const result = await upgradeNode([b.realNode, '--to', `containerd=${b.containerd.new}`, '--dry-run', '--output', 'json', ...DRAIN_FLAGS, ...sshFlags(b.realNode)]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.result).toBe('planned');
    expect(report.steps.map((s: any) => s.status)).toEqual(Array(STEPS.length).fill('planned'));
    const step = (name: string) => report.steps.find((s: any) => s.name === name);
    expect(step('drain').detail.evict.length).toBeGreaterThan(0);
    expect(step('teardown-sandboxes').detail.sandboxes.length).toBeGreaterThan(0);
    expect(step('clear-state').detail.files.some((f: string) => f.startsWith('/var/lib/cni/networks/kubenet/'))).toBe(true);
    expect(step('upgrade-runtime').actions).toContain(`install containerd ${b.containerd.old} -> ${b.containerd.new}`);
    expect(step('prove-node').actions[0]).toMatch(/^start smoke pod kube-system\/node-maint-smoke-\w+ on real-node/);
    expect(await realNodeFingerprint()).toEqual(before);
  });

  it('prints a readable plan without --output json', async () => {
    const b = bed();
    const result = await upgradeNode([b.realNode, '--to', `containerd=${b.containerd.new}`, '--dry-run', ...DRAIN_FLAGS, ...sshFlags(b.realNode)]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Dry run \(nothing changed\) on node real-node: planned/);
    expect(result.stdout).toContain(`containerd: ${b.containerd.old} -> ${b.containerd.new} (planned)`);
    expect(result.stderr).toContain('[ 5/11] Tear down sandbox networks');
  });
});
