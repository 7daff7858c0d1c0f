import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bed, sh, upgradeNode, waitFor } from './bed.js';
import { expectServing, lease, realNode, report, stepLine, upgradeArgs } from './faults.js';

// The API or the SSH session gone for a while, mid-run, on the real node.
const t = realNode();
const apiserverPid = () => Number(readFileSync('/run/node-maint-testbed/pids/kube-apiserver.pid', 'utf8').trim().split(/\s+/)[0]);

/** The apiserver frozen (SIGSTOP: connections hang, as with a dead load balancer) for a while, then thawed. */
function freezeApiserver(ms: number): Promise<void> {
  const pid = apiserverPid();
  process.kill(pid, 'SIGSTOP');
  return new Promise((resolve) => setTimeout(() => (process.kill(pid, 'SIGCONT'), resolve()), ms));
}

/** The apiserver stopped (connections refused) for a while, then started again by the bed. */
async function stopApiserver(ms: number): Promise<void> {
  await sh('bash testbed/ctl stop kube-apiserver');
  await new Promise((r) => setTimeout(r, ms));
  await sh('bash testbed/ctl start');
}

/** Runs the upgrade and, when `line` appears, does `fault` (without waiting for it). */
function upgradeWith(line: string, fault: () => Promise<void>, extra: string[] = []) {
  let fired: Promise<void> | undefined;
  const result = upgradeNode(upgradeArgs(t, bed().containerd.new, extra), {
    onStderr: (text) => {
      if (!fired && text.includes(line)) fired = fault();
    },
  });
  return result.then(async (r) => {
    await fired;
    expect(fired, `never saw ${line}`).toBeDefined();
    return r;
  });
}

describe('the API or the connection lost mid-run', () => {
  beforeAll(async () => {
    await t.reset();
  });
  afterEach(async () => {
    await sh('bash testbed/ctl start');
    process.kill(apiserverPid(), 'SIGCONT');
    await t.reset();
  });

  it('the apiserver unreachable for 30 s during the drain: waited out, the upgrade finishes', async () => {
    const result = await upgradeWith(stepLine('drain'), () => freezeApiserver(30_000));
    expect(result.code, result.stderr).toBe(0);
    // Frozen past the renew deadline, the Lease was suspended, and renewed by a write conditional on our last one.
    expect(result.stderr).toContain('the Lease is renewed again');
    expect(report(result).result).toBe('upgraded');
    await expectServing(t, bed().containerd.new);
  });

  it('the apiserver unreachable for 30 s during the upgrade: no change to the node until the Lease is renewed, then it finishes', async () => {
    const result = await upgradeWith(stepLine('upgrade-runtime'), () => freezeApiserver(30_000));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('the Lease is renewed again');
    await expectServing(t, bed().containerd.new);
  });

  it('the SSH session cut during the upgrade: the step is planned again on a new connection and finishes', async () => {
    const sshd = readFileSync('/run/node-maint-testbed/sshd.pid', 'utf8').trim();
    const cut = async () => {
      // While apt is at work on the node: the command in flight is the one whose connection goes.
      await waitFor(async () => (await t.sh('pgrep -x apt-get || true')).trim() !== '', 60_000, 'apt-get to run');
      // The per-connection sshd processes (the master stays): what a dropped network does to the session.
      await t.sh(`pkill -KILL -P ${sshd}; true`);
    };
    const result = await upgradeWith(stepLine('upgrade-runtime'), cut);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('planning the step again on a new connection');
    expect(report(result).result).toBe('upgraded');
    expect(report(result).rollback).toEqual([]);
    await expectServing(t, bed().containerd.new);
  });

  it('an API failure in the check after uncordon: reported with exit 14 or 15, nothing downgraded; the same command finishes it', async () => {
    // Stopped, not frozen: connections are refused at once, and the outage stays under the controller-manager's 40 s
    // node grace (past it, kwok's pods would be marked NotReady for good).
    const result = await upgradeWith(stepLine('verify'), () => stopApiserver(20_000), ['--outage-tolerance', '8s']);
    expect([14, 15], result.stderr).toContain(result.code);
    const r = report(result);
    expect(r.pointOfNoReturn).toBe(true);
    expect(r.rollback).toEqual([]);
    expect(r.steps.find((s: any) => s.name === 'uncordon').status).toBe('done');
    expect(r.next).toContain('nothing was downgraded');
    expect((await lease(t.name)).journal.status).toBe('running');

    const again = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(again.code, again.stderr).toBe(0);
    const steps = Object.fromEntries(report(again).steps.map((s: any) => [s.name, s.status]));
    expect(steps).toMatchObject({ cordon: 'done-earlier', 'upgrade-runtime': 'done-earlier', uncordon: 'done-earlier', verify: 'done' });
    await expectServing(t, bed().containerd.new);
  });
});
