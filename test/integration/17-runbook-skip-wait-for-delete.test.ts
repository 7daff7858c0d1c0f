import { expect, it } from 'vitest';
import { bed, kubectlJson, upgradeNode } from './bed.js';
import { report, upgradeArgs } from './faults.js';
import { holdPodOnNode, nodeAudit, releaseHeldPod } from './fixtures.js';
import { onLeasedNode, useNamespace } from './pool.js';

// kubectl drain's --skip-wait-for-delete-timeout: a pod a finalizer holds Terminating (its containers and sandbox long
// gone, only its API object left) would hold every drain until its timeout.
const ns = useNamespace();

it('a pod a finalizer holds: without the flag the drain times out on it and rolls back; with it, not waited for, not counted stuck, the run ends upgraded', onLeasedNode('any', async (t) => {
  await holdPodOnNode(ns.name, 'held', t.name);
  try {
    const waited = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--timeout', '20s']));
    expect(waited.code, waited.stderr).toBe(11);
    expect(report(waited).error.message).toContain(`${ns.name}/held`);
    expect((await kubectlJson('get', 'pod', '-n', ns.name, 'held')).metadata.deletionTimestamp).toBeTruthy();

    const skipped = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--skip-wait-for-delete-timeout', '5s']));
    expect(skipped.code, skipped.stderr).toBe(0);
    const drain = report(skipped).steps.find((s: any) => s.name === 'drain');
    expect(drain.detail.leftInPlace).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${ns.name}/held \\(deleted \\d+s ago, past --skip-wait-for-delete-timeout\\)$`))]));
    // The standalone audit knows no such flag: the pod is still stuck Terminating there.
    const audit = await nodeAudit(t);
    expect(audit.code, audit.stderr).toBe(13);
    expect(JSON.parse(audit.stdout).findings.map((f: any) => [f.class, f.evidence.pod])).toEqual([['stuck-terminating', `${ns.name}/held`]]);
    expect(JSON.parse((await nodeAudit(t, ['--skip-wait-for-delete-timeout', '5s'])).stdout).verdict).toBe('clean');
  } finally {
    await releaseHeldPod(ns.name, 'held').catch(() => undefined);
  }
}));
