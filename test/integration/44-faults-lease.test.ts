import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson, upgradeNode, type CliResult } from './bed.js';
import { apiFilter } from './api-filter.js';
import { expectServing, kubeletPid, lease, report, stepLine, upgradeArgs, withKubeconfig } from './faults.js';
import { holdPodOnNode, releaseHeldPod } from './fixtures.js';
import { onLeasedNode, useNamespace, type TestNode } from './pool.js';

// The node's Lease as a fence: one run per node, judged by our own clock (client-go's leader election), and a run
// that loses it stops changing the node at once. Each case on a node of its own, leased for the case.
const ns = useNamespace();
const LEASE = (t: TestNode) => `node-maint-${t.name}`;
const FOREIGN = 'node-maint/other-machine/4242/1';
const HELD = 'held-lease';
const microTime = (ms: number) => new Date(ms).toISOString().replace('Z', '000Z');

async function writeLease(t: TestNode, holder: string | null, renewTime: string, leaseDurationSeconds = 15): Promise<void> {
  const file = `/tmp/${LEASE(t)}-${process.pid}.json`;
  writeFileSync(file, JSON.stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEASE(t), namespace: 'kube-system' }, spec: { holderIdentity: holder, leaseDurationSeconds, renewTime } }));
  await kubectl('apply', '--server-side', '--force-conflicts', '-f', file);
}

const patchLease = (t: TestNode, spec: Record<string, unknown>) => kubectl('-n', 'kube-system', 'patch', 'lease', LEASE(t), '--type', 'merge', '-p', JSON.stringify({ spec }));
const schedulable = async (t: TestNode) => !(await kubectlJson('get', 'node', t.name)).spec.unschedulable;

describe('the Lease', () => {
  it.concurrent('a holder whose clock runs 60 s ahead and still renews: never taken over (exit 9), the node untouched', onLeasedNode('any', async (t) => {
    const ahead = () => microTime(Date.now() + 60_000);
    await writeLease(t, FOREIGN, ahead());
    const renewing = setInterval(() => void patchLease(t, { renewTime: ahead() }).catch(() => undefined), 2_000);
    const pid = await kubeletPid(t);
    try {
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
      expect(result.code, result.stderr).toBe(9);
      expect(report(result).error.message).toContain(`is being maintained by ${FOREIGN} (Lease kube-system/${LEASE(t)} is being renewed)`);
    } finally {
      clearInterval(renewing);
    }
    expect(await schedulable(t)).toBe(true);
    expect(await kubeletPid(t)).toBe(pid);
    expect((await lease(t.name)).holder).toBe(FOREIGN);
  }));

  it.concurrent('a Lease written by hand for an hour (an operator fencing the node): exit 9 at once, naming it and when it runs out; never taken', onLeasedNode('any', async (t) => {
    await writeLease(t, 'someone-else', microTime(Date.now()), 3600);
    const pid = await kubeletPid(t);
    const started = Date.now();
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(9);
    const message = report(result).error.message;
    expect(message).toContain(`is held by someone-else (Lease kube-system/${LEASE(t)}, leaseDurationSeconds 3600, longer than this run waits: 15s)`);
    const runsOut = Date.parse(/runs out at (\S+) by this machine's clock/.exec(message)![1]!);
    expect(runsOut - started).toBeGreaterThanOrEqual(3_590_000);
    // Not waited for a lease duration of ours (15 s) and then taken, as before: the node and the Lease as they were.
    expect(await schedulable(t)).toBe(true);
    expect(await kubeletPid(t)).toBe(pid);
    expect((await lease(t.name)).holder).toBe('someone-else');
    await kubectl('-n', 'kube-system', 'delete', 'lease', LEASE(t));
  }));

  it.concurrent('a Lease left by a dead run elsewhere: waited out for a lease duration by our clock, then taken over; a second run meanwhile: exit 9 at once, nothing changed; the first finishes', onLeasedNode('any', async (t) => {
    await writeLease(t, FOREIGN, microTime(Date.now()));
    const started = Date.now();
    let second: Promise<CliResult> | undefined;
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new), {
      onStderr: (text) => {
        if (!second && text.includes(stepLine('drain'))) second = upgradeNode(upgradeArgs(t, bed().containerd.new));
      },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`taking over the Lease from ${FOREIGN}, which stopped renewing it`);
    expect(Date.now() - started).toBeGreaterThan(15_000);
    const other = await second!;
    expect(other.code, other.stderr).toBe(9);
    // By this run, which took the Lease over before its drain.
    expect(other.stderr).toMatch(/is being maintained by node-maint\/[^/]+\/\d+\//);
    expect(other.stderr).not.toContain(FOREIGN);
    await expectServing(t, bed().containerd.new, { afterRun: result });
  }));

  it.concurrent('the Lease taken by another run mid-drain: this run stops changing the node at once (exit 16); once it is free the same command finishes', onLeasedNode('any', async (t) => {
    // A pod held by a finalizer keeps the drain waiting until the run has seen the loss: the theft lands before the
    // next change, not during it (a command already under way when the Lease is taken still finishes).
    await holdPodOnNode(ns.name, HELD, t.name);
    try {
      await stolenMidDrain(t);
    } finally {
      await releaseHeldPod(ns.name, HELD).catch(() => undefined);
    }
  }));

  it.concurrent('a rollback\'s uncordon held up in the network past a Lease takeover never lands: the node stays with the new holder, cordoned', onLeasedNode('any', async (t) => {
    // Through a proxy that holds the first uncordon of this node (a merge patch that clears spec.unschedulable).
    const api = await apiFilter([], (method, path, body) => method === 'PATCH' && path.startsWith(`/api/v1/nodes/${t.name}`) && body.includes('"unschedulable":null'));
    try {
      const run = upgradeNode(withKubeconfig(upgradeArgs(t, bed().containerd.new, ['--hook-before-drain', 'exit 3']), api.kubeconfig));
      await api.held;
      // Meanwhile another run takes the Lease over and starts on the node (its first write marks it).
      await patchLease(t, { holderIdentity: FOREIGN, renewTime: microTime(Date.now()) });
      await kubectl('label', 'node', t.name, 'node-maint.io/state=preflight', '--overwrite');
      await new Promise((r) => setTimeout(r, 5_000));
      api.release();
      const result = await run;
      expect(result.code, result.stderr).toBe(16);
      expect(report(result).rollback.find((r: any) => r.step === 'cordon')).toBeUndefined();
      expect(await schedulable(t)).toBe(false);
      expect((await lease(t.name)).holder).toBe(FOREIGN);
    } finally {
      await api.close();
      await patchLease(t, { holderIdentity: null });
    }
    const again = await upgradeNode([...upgradeArgs(t, bed().containerd.new), '--rollback']);
    expect(again.code, again.stderr).toBe(11);
    await expectServing(t, bed().containerd.old);
  }));
});

async function stolenMidDrain(t: TestNode): Promise<void> {
  let stolen: Promise<unknown> | undefined;
  let seen = false;
  const result = await upgradeNode(upgradeArgs(t, bed().containerd.new), {
    onStderr: (text) => {
      if (!stolen && text.includes(stepLine('drain'))) stolen = patchLease(t, { holderIdentity: FOREIGN });
      if (!seen && text.includes(`the Lease was taken by ${FOREIGN}: no further change to the node`)) {
        seen = true;
        void releaseHeldPod(ns.name, HELD);
      }
    },
  });
  await stolen;
  expect(seen, result.stderr).toBe(true);
  expect(result.code, result.stderr).toBe(16);
  const r = report(result);
  expect(r.result).toBe('lease-lost');
  expect(r.rollback).toEqual([]);
  // Whichever change came next after the loss was refused before it reached the node: kubelet still runs.
  const next = r.steps.find((s: any) => s.status === 'failed');
  expect(next.error).toContain(`the Lease was taken by ${FOREIGN}; this run stopped changing the node`);
  expect(r.steps.slice(r.steps.indexOf(next) + 1).every((s: any) => s.status === 'not-run')).toBe(true);
  expect(['drain', 'stop-kubelet']).toContain(next.name);
  expect((await t.sh('systemctl is-active kubelet || true')).trim()).toBe('active');
  const after = await lease(t.name);
  expect(after.holder).toBe(FOREIGN);
  expect(after.journal.status).toBe('running');

  // The other run gives the Lease back without finishing: the journal is still this run's, and the same command ends it.
  await patchLease(t, { holderIdentity: null });
  const again = await upgradeNode(upgradeArgs(t, bed().containerd.new));
  expect(again.code, again.stderr).toBe(0);
  expect(report(again).mode).toBe('resume');
  await expectServing(t, bed().containerd.new, { afterRun: again });
}
