import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, installedContainerd, kubectl, kubectlJson, resetRealNode, sshFlags, upgradeNode } from './bed.js';

describe('a node that was cordoned before the run', () => {
  beforeAll(async () => {
    await resetRealNode();
    await kubectl('cordon', bed().realNode);
  });
  afterAll(async () => {
    await kubectl('uncordon', bed().realNode);
  });

  it('is upgraded and stays cordoned after it', async () => {
    const b = bed();
    const result = await upgradeNode([b.realNode, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...sshFlags(b.realNode)]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.steps.find((s: any) => s.name === 'cordon').status).toBe('nothing-to-do');
    expect(report.steps.find((s: any) => s.name === 'uncordon').summary).toMatch(/was cordoned before the run: stays cordoned/);
    expect(await installedContainerd()).toBe(b.containerd.new);
    expect((await kubectlJson('get', 'node', b.realNode)).spec.unschedulable).toBe(true);
  });
});
