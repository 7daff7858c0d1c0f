import { beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, installedContainerd, kubectlJson, resetRealNode, sshFlags, upgradeNode } from './bed.js';

describe('a run killed during the sandbox teardown', () => {
  beforeAll(async () => {
    await resetRealNode();
  });

  it('is started again, resumes from its journal and finishes clean', async () => {
    const b = bed();
    const args = [b.realNode, '--to', `containerd=${b.containerd.new}`, ...DRAIN_FLAGS, ...sshFlags(b.realNode)];
    const killed = await upgradeNode(args, {
      onStderr: (text, kill) => {
        if (text.includes('[ 5/10] Tear down sandbox networks ...')) kill();
      },
    });
    expect(killed.code).toBe(128);
    expect(killed.stderr).not.toContain('[ 6/10]');
    const lease = await kubectlJson('get', 'lease', '-n', 'kube-system', `node-maint-${b.realNode}`);
    expect(JSON.parse(lease.metadata.annotations['node-maint.io/journal']).status).toBe('running');

    const resumed = await upgradeNode([...args, '--output', 'json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const report = JSON.parse(resumed.stdout);
    expect(report.resumed).toBe(true);
    expect(report.result).toBe('upgraded');
    expect(report.audit.findings).toBe(0);
    expect(report.steps.find((s: any) => s.name === 'cordon').status).toBe('nothing-to-do');
    expect(report.steps.find((s: any) => s.name === 'uncordon').status).toBe('done');
    expect(await installedContainerd()).toBe(b.containerd.new);
    const node = await kubectlJson('get', 'node', b.realNode);
    expect(node.spec.unschedulable).toBeUndefined();
  });
});
