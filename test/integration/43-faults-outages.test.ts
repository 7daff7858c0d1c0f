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

type Fault = [line: string, fault: () => Promise<void>];

/** Runs the upgrade and, as each fault's line appears, does that fault (without waiting for it). */
function upgradeWith(t: Target, api: ApiProxy, faults: Fault[], extra: string[] = []) {
  const fired: Array<Promise<void> | undefined> = faults.map(() => undefined);
  const result = upgradeNode(withKubeconfig(upgradeArgs(t, bed().containerd.new, extra), api.kubeconfig), {
    onStderr: (text) => faults.forEach(([line, fault], i) => {
      if (!fired[i] && text.includes(line)) fired[i] = fault();
    }),
  });
  return result.then(async (r) => {
    await Promise.all(fired);
    faults.forEach(([line], i) => expect(fired[i], `never saw ${line}`).toBeDefined());
    return r;
  });
}

/** Cuts the node's SSH sessions while apt is at work on it (the command in flight is the one whose connection goes). */
async function sshCutter(t: Target): Promise<() => Promise<void>> {
  const sshd = (await t.sh('systemctl show -p MainPID --value ssh')).trim();
  return async () => {
    await waitFor(async () => (await t.sh('pgrep -x apt-get || true')).trim() !== '', 60_000, 'apt-get to run');
    // The per-connection sshd processes (the master stays): what a dropped network does to the session.
    await t.sh(`pkill -KILL -P ${sshd}; true`);
  };
}

describe('the API or the connection lost mid-run', () => {
  it.concurrent('the apiserver unreachable for 30 s during the drain, and again during the upgrade: waited out, no change to the node until the Lease is renewed, then it finishes', onNode(async (t, api) => {
    const freeze = () => api.freeze(30_000);
    const result = await upgradeWith(t, api, [[stepLine('drain'), freeze], [stepLine('upgrade-runtime'), freeze]]);
    expect(result.code, result.stderr).toBe(0);
    // Frozen past the renew deadline, the Lease was suspended, and renewed by a write conditional on our last one: twice.
    expect(result.stderr.match(/the Lease is renewed again/g)?.length, result.stderr).toBeGreaterThanOrEqual(2);
    expect(report(result).result).toBe('upgraded');
    await expectServing(t, bed().containerd.new, { afterRun: result });
  }));

  it.concurrent('the apiserver gone past --outage-tolerance during the drain: stopped as an API outage (exit 5), not a lost Lease; the same command finishes, its SSH session cut during the upgrade: the step planned again on a new connection', onNode(async (t, api) => {
    const result = await upgradeWith(t, api, [[stepLine('drain'), () => api.stop(40_000)]], ['--outage-tolerance', '10s']);
    expect(result.code, result.stderr).toBe(5);
    const r = report(result);
    expect(r.result).toBe('api-outage');
    expect(r.next).toContain('so the Lease could not be renewed and this run stopped changing');
    expect(result.stderr).not.toContain('the Lease was taken by');
    // The API back (the proxy listens again), the same command resumes the run from its journal and finishes it, though
    // its SSH session is cut while apt is at work.
    const again = await upgradeWith(t, api, [[stepLine('upgrade-runtime'), await sshCutter(t)]]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('planning the step again on a new connection');
    expect(report(again).result).toBe('upgraded');
    expect(report(again).rollback).toEqual([]);
    await expectServing(t, bed().containerd.new, { afterRun: again });
  }));

  it.concurrent('an API failure in the check after uncordon: reported with exit 14 or 15, nothing downgraded; the same command finishes it', onNode(async (t, api) => {
    // Refused, not hanging: connections are refused at once, for longer than --outage-tolerance.
    const result = await upgradeWith(t, api, [[stepLine('verify'), () => api.stop(20_000)]], ['--outage-tolerance', '8s']);
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
    await expectServing(t, bed().containerd.new, { afterRun: again });
  }));
});
