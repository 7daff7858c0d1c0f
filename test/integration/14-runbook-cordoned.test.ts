import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, kubectl, kubectlJson, upgradeNode } from './bed.js';
import { useNodes } from './pool.js';
import { containerdOn } from './pulumi.js';

describe('a node that was cordoned before the run', () => {
  const [t] = useNodes('any');
  beforeAll(async () => {
    await kubectl('cordon', t.name);
  });
  // Tests put back what they change: the node goes back to the pool schedulable.
  afterAll(async () => {
    await kubectl('uncordon', t.name);
  });

  it('is upgraded and stays cordoned after it', async () => {
    const b = bed();
    const result = await upgradeNode([t.name, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.steps.find((s: any) => s.name === 'cordon').status).toBe('nothing-to-do');
    expect(report.steps.find((s: any) => s.name === 'uncordon').summary).toMatch(/was cordoned before the run: stays cordoned/);
    expect(await containerdOn(t)).toBe(b.containerd.new);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBe(true);
  });
});
