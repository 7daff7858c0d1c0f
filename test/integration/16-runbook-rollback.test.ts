import { writeFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, installedContainerd, kubectlJson, resetRealNode, sh, sshFlags, upgradeNode } from './bed.js';

// A dpkg hook that refuses only the new containerd: the real apt fails the install, the rollback's reinstall works.
const HOOK = '/etc/apt/apt.conf.d/99node-maint-test-fail';

describe('a run whose package install fails', () => {
  beforeAll(async () => {
    await resetRealNode();
    writeFileSync(HOOK, `DPkg::Pre-Install-Pkgs {"if grep -q 'containerd_${bed().containerd.new.replace(/[~+]/g, '.')}'; then echo 'test: refusing the new containerd' >&2; exit 1; fi";};\n`);
  });
  afterAll(() => rmSync(HOOK, { force: true }));

  it('rolls back: old containerd, kubelet running, node uncordoned, Lease released', async () => {
    const b = bed();
    const result = await upgradeNode([b.realNode, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...sshFlags(b.realNode)]);
    expect(result.code, result.stderr).toBe(11);
    const report = JSON.parse(result.stdout);
    expect(report.result).toBe('rolled-back');
    expect(report.steps.find((s: any) => s.name === 'upgrade-runtime').status).toBe('failed');
    expect(report.rollback.map((r: any) => [r.step, r.status])).toEqual([
      ['upgrade-runtime', 'done'],
      ['stop-kubelet', 'done'],
      ['cordon', 'done'],
    ]);
    expect(await installedContainerd()).toBe(b.containerd.old);
    expect((await sh('systemctl is-active kubelet containerd docker cri-docker')).split('\n').filter(Boolean)).toEqual(['active', 'active', 'active', 'active']);
    const node = await kubectlJson('get', 'node', b.realNode);
    expect(node.spec.unschedulable).toBeUndefined();
    const lease = await kubectlJson('get', 'lease', '-n', 'kube-system', `node-maint-${b.realNode}`);
    expect(lease.spec.holderIdentity).toBeUndefined();
    expect(JSON.parse(lease.metadata.annotations['node-maint.io/journal']).status).toBe('rolled-back');
  });
});
