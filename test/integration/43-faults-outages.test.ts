import { afterAll, describe, expect, it } from 'vitest';
import { bed, upgradeNode, waitFor } from './bed.js';
import { apiProxy, type ApiProxy } from './api-proxy.js';
import { expectServing, lease, report, stepLine, upgradeArgs, withKubeconfig, type Target } from './faults.js';
import { onLeasedNode } from './pool.js';

// The API or the SSH session gone for a while, mid-run. The run reaches the apiserver through a proxy of the test's
// own, which hangs (as a dead load balancer in front of the apiserver) or refuses: only this run loses the API, so
// the other files' runs and kubelets go on. Each case on a docker node of its own, leased for the case, from a reset
// node.
const proxies: ApiProxy[] = [];
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
});

/** A case on the next node, with an API proxy of its own. */
const onNode = (fn: (t: Target, api: ApiProxy) => Promise<void>) =>
  onLeasedNode('docker', async (t) => {
    const api = await apiProxy();
    proxies.push(api);
    await fn(t, api);
  });

/** Runs the upgrade and, when `line` appears, does `fault` (without waiting for it). */
function upgradeWith(t: Target, api: ApiProxy, line: string, fault: () => Promise<void>, extra: string[] = []) {
  let fired: Promise<void> | undefined;
  const result = upgradeNode(withKubeconfig(upgradeArgs(t, bed().containerd.new, extra), api.kubeconfig), {
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
  it.concurrent('the apiserver unreachable for 30 s during the drain: waited out, the upgrade finishes', onNode(async (t, api) => {
    const result = await upgradeWith(t, api, stepLine('drain'), () => api.freeze(30_000));
    expect(result.code, result.stderr).toBe(0);
    // Frozen past the renew deadline, the Lease was suspended, and renewed by a write conditional on our last one.
    expect(result.stderr).toContain('the Lease is renewed again');
    expect(report(result).result).toBe('upgraded');
    await expectServing(t, bed().containerd.new);
  }));

  it.concurrent('the apiserver unreachable for 30 s during the upgrade: no change to the node until the Lease is renewed, then it finishes', onNode(async (t, api) => {
    const result = await upgradeWith(t, api, stepLine('upgrade-runtime'), () => api.freeze(30_000));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('the Lease is renewed again');
    await expectServing(t, bed().containerd.new);
  }));

  it.concurrent('the SSH session cut during the upgrade: the step is planned again on a new connection and finishes', onNode(async (t, api) => {
    const sshd = (await t.sh('systemctl show -p MainPID --value ssh')).trim();
    const cut = async () => {
      // While apt is at work on the node: the command in flight is the one whose connection goes.
      await waitFor(async () => (await t.sh('pgrep -x apt-get || true')).trim() !== '', 60_000, 'apt-get to run');
      // The per-connection sshd processes (the master stays): what a dropped network does to the session.
      await t.sh(`pkill -KILL -P ${sshd}; true`);
    };
    const result = await upgradeWith(t, api, stepLine('upgrade-runtime'), cut);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('planning the step again on a new connection');
    expect(report(result).result).toBe('upgraded');
    expect(report(result).rollback).toEqual([]);
    await expectServing(t, bed().containerd.new);
  }));

  it.concurrent('the apiserver gone past --outage-tolerance during the drain: stopped as an API outage (exit 5), not a lost Lease; the same command finishes', onNode(async (t, api) => {
    const result = await upgradeWith(t, api, stepLine('drain'), () => api.stop(40_000), ['--outage-tolerance', '10s']);
    expect(result.code, result.stderr).toBe(5);
    const r = report(result);
    expect(r.result).toBe('api-outage');
    expect(r.next).toContain('so the Lease could not be renewed and this run stopped changing');
    expect(result.stderr).not.toContain('the Lease was taken by');
    // The API back (the proxy listens again), the same command resumes the run from its journal and finishes it.
    const again = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(again.code, again.stderr).toBe(0);
    expect(report(again).result).toBe('upgraded');
    await expectServing(t, bed().containerd.new);
  }));

  it.concurrent('an API failure in the check after uncordon: reported with exit 14 or 15, nothing downgraded; the same command finishes it', onNode(async (t, api) => {
    // Refused, not hanging: connections are refused at once, for longer than --outage-tolerance.
    const result = await upgradeWith(t, api, stepLine('verify'), () => api.stop(20_000), ['--outage-tolerance', '8s']);
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
  }));
});
