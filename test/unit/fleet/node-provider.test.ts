import { describe, expect, it } from 'vitest';
import { check, diff, runNode, type NodeRunDeps } from '../../../src/fleet/node-provider.js';
import type { RunReport } from '../../../src/runbook/report.js';
import { RunbookError } from '../../../src/errors.js';
import { FleetRuns } from '../../../src/fleet/fleet-run.js';

/** Deps that record what the node's run asked for, in order; the run ends as `ended` says. */
function fakeDeps({ holds = [] as string[], ended = {} as Partial<RunReport>, before, after, unreachable, unfinished, blocked }: { holds?: string[]; ended?: Partial<RunReport>; before?: string; after?: string; unreachable?: string; unfinished?: string; blocked?: string } = {}) {
  const calls: string[] = [];
  const deps: NodeRunDeps = {
    fleetHolds: async () => holds,
    unfinishedRun: async () => unfinished,
    beforeFleetNode: async (i, _log, options) => {
      calls.push(`before ${i.node}${options?.alerts === false ? ' (no alerts)' : ''}${options?.maintaining?.length ? ` (maintaining ${options.maintaining.join(',')})` : ''}`);
      if (before) throw new Error(before);
      return { schedulable: true, workloads: [] };
    },
    upgradeFleetNode: async (i) => {
      calls.push(`upgrade ${i.node}`);
      if (unreachable) throw new RunbookError('unreachable', unreachable);
      return { runId: 'r', result: 'upgraded', exitCode: 0, versions: { before: {}, target: {}, after: {} }, steps: [], rollback: [], durationMs: 1, ...ended } as unknown as RunReport;
    },
    markSkipped: async (i, runId, reason) => void calls.push(`marked ${i.node} ${runId}: ${reason}`),
    afterFleetNode: async (i, b) => {
      calls.push(`after ${i.node} ${b.schedulable}`);
      if (after) throw new Error(after);
    },
    notifyNodeEnd: async (webhook, _i, o) => void calls.push(`notify ${webhook ?? 'none'} ${o.result}${o.exitCode !== undefined ? ` (exit ${o.exitCode})` : ''}${o.error ? `: ${o.error}` : ''}`),
    notifyFleet: async (_webhook, m) => void calls.push(`fleet ${m.event}: ${m.text}`),
    clearWaitingTaints: async (i, which) => void calls.push(`untaint ${which === 'own' ? i.node : 'every node of the fleet'}`),
    waitForBlockingPods: async (i) => {
      if (!blocked) return;
      calls.push(`blocking pods ${i.node}`);
      throw new Error(blocked);
    },
  };
  return { deps, calls };
}

const inputs = { node: 'n', targets: { containerd: '2' }, leaseNamespace: 'kube-system', maintenanceWindow: { schedule: '0 22 * * 6', durationMinutes: 240, timeZone: 'UTC' } } as never;
const quiet = () => undefined;
const run = (deps: NodeRunDeps, extra: object = {}, runs = new FleetRuns()) => runNode({ ...(inputs as object), ...extra } as never, { deps, log: quiet, runs });

describe("a fleet node's run in the provider", () => {
  it('a node held by the window or a pause is a hold, not a failure: left as it was, every reason said, the webhook told, no fleet-failed', async () => {
    const { deps, calls } = fakeDeps({ holds: ['outside the maintenance window', 'paused by ConfigMap kube-system/node-maint-pause'] });
    const why = 'outside the maintenance window; paused by ConfigMap kube-system/node-maint-pause';
    expect(await run(deps, { fleet: 'p/s', later: { names: ['m'], count: 1 } })).toMatchObject({ node: 'n', result: 'held', held: why, skipped: null, runId: null });
    expect(calls).toEqual([`notify none held: ${why}`]);
  });

  it('a node not held is upgraded between its gates, and its end is told to the webhook', async () => {
    const { deps, calls } = fakeDeps();
    expect(await run(deps, { webhook: 'http://127.0.0.1:1/hook' })).toMatchObject({ node: 'n', result: 'upgraded', skipped: null });
    expect(calls).toEqual(['before n', 'upgrade n', 'after n true', 'notify http://127.0.0.1:1/hook upgraded']);
  });

  it('a run that found nothing to do is said so, and soaks nothing: it changed nothing', async () => {
    const soaks: number[] = [];
    const lines: string[] = [];
    const { deps } = fakeDeps({ ended: { result: 'nothing-to-do' } as Partial<RunReport> });
    const counting = { ...deps, afterFleetNode: async (i: { soakSeconds?: number }) => void soaks.push(i.soakSeconds ?? -1) } as NodeRunDeps;
    const options = { deps: counting, log: (l: string) => void lines.push(l), runs: new FleetRuns() };
    const node = { ...(inputs as object), soakSeconds: 60, reboot: { policy: 'if-required', timeoutSeconds: 600 } };
    expect(await runNode(node as never, options)).toMatchObject({ result: 'nothing-to-do' });
    expect(lines).toContain('[n] nothing to do: its run read the node and found it at its targets, no reboot required');
    const upgraded = fakeDeps();
    await runNode(node as never, { ...options, deps: { ...upgraded.deps, afterFleetNode: counting.afterFleetNode } });
    expect(soaks).toEqual([0, 60]);
  });

  it('a blocking pod past its wait: the node is passed by with undrainable: skip, else the fleet stops there; never started', async () => {
    const why = 'timed out after 20s waiting for no pod matching app=backup on n: held by blocking pod(s) ns/backup-1 on n';
    const skip = fakeDeps({ blocked: why });
    expect(await run(skip.deps, { undrainable: 'skip' })).toMatchObject({ result: 'skipped-undrainable', skipped: why, runId: null });
    expect(skip.calls).toEqual(['before n', 'blocking pods n', `marked n undefined: ${why}`, `notify none skipped-undrainable: ${why}`]);
    const stop = fakeDeps({ blocked: why });
    await expect(run(stop.deps)).rejects.toThrow(`n: not started: ${why}`);
    expect(stop.calls.some((c) => c.startsWith('upgrade'))).toBe(false);
  });

  it('the waiting taint: a node loses its own as its run ends; a failed fleet takes it off every waiting node', async () => {
    const done = fakeDeps();
    await run(done.deps, { waitingTaint: true });
    expect(done.calls).toEqual(['before n', 'upgrade n', 'after n true', 'notify none upgraded', 'untaint n']);
    const failed = fakeDeps({ ended: { exitCode: 11, result: 'rolled-back' } as Partial<RunReport> });
    await expect(run(failed.deps, { waitingTaint: true, later: { names: ['m', 'o'], count: 2 } })).rejects.toThrow();
    expect(failed.calls.filter((c) => c.startsWith('untaint'))).toEqual(['untaint every node of the fleet']);
    const untainted = fakeDeps();
    await run(untainted.deps);
    expect(untainted.calls.filter((c) => c.startsWith('untaint'))).toEqual([]);
  });

  it('a node a killed pulumi up left half-done is finished first: neither the window, the pause nor the alerts hold it', async () => {
    const { deps, calls } = fakeDeps({ holds: ['outside the maintenance window'], before: 'held by firing alert(s): KubeNodeNotReady', unfinished: 'run r1, running' });
    const lines: string[] = [];
    expect(await runNode({ ...(inputs as object) } as never, { deps: { ...deps, beforeFleetNode: async (i, _l, o) => (calls.push(`before ${i.node}${o?.alerts === false ? ' (no alerts)' : ''}`), { schedulable: false, workloads: [] }) }, log: (l) => lines.push(l), runs: new FleetRuns() })).toMatchObject({ result: 'upgraded' });
    expect(calls).toEqual(['before n (no alerts)', 'upgrade n', 'after n false', 'notify none upgraded']);
    expect(lines[0]).toBe('[n] finishing the unfinished run r1, running first: the window, the pause and the alerts are not asked for a node already out of service');
  });

  it('the alert gate is told which other nodes of the fleet are under way, so their own alerts do not hold this one', async () => {
    const { deps, calls } = fakeDeps();
    const runs = new FleetRuns();
    runs.started('p/s', 'm');
    await run(deps, { fleet: 'p/s' }, runs);
    expect(calls[0]).toBe('before n (maintaining m)');
  });

  it('a gate before the node (alerts) stops it unstarted; a gate after it (workloads) stops the fleet with the node done', async () => {
    const held = fakeDeps({ before: 'the fleet stops here: held by firing alert(s): NodeDown' });
    await expect(run(held.deps)).rejects.toThrow('n: not started: the fleet stops here: held by firing alert(s): NodeDown');
    expect(held.calls).toEqual(['before n', 'notify none not-started: the fleet stops here: held by firing alert(s): NodeDown', 'fleet fleet-failed: node-maint fleet: failed: 1 not-started; n: not started: the fleet stops here: held by firing alert(s): NodeDown']);
    const slow = fakeDeps({ after: 'upgraded, but the fleet stops here: demo/web 1/2' });
    await expect(run(slow.deps)).rejects.toThrow('n: gate-failed: upgraded, but the fleet stops here: demo/web 1/2');
    expect(slow.calls.slice(0, 4)).toEqual(['before n', 'upgrade n', 'after n true', 'notify none gate-failed: upgraded, but the fleet stops here: demo/web 1/2']);
  });

  it('an undrainable node fails the fleet by default; with undrainable: skip it is marked and passed by', async () => {
    const blocked = { exitCode: 8, result: 'failed', error: { code: 'blockedByBudget', message: 'budget ledger allows no eviction' } } as Partial<RunReport>;
    await expect(run(fakeDeps({ ended: blocked }).deps)).rejects.toThrow('n: failed (exit 8): budget ledger allows no eviction');
    const skip = fakeDeps({ ended: blocked });
    expect(await run(skip.deps, { undrainable: 'skip' })).toMatchObject({ result: 'skipped-undrainable', skipped: 'budget ledger allows no eviction' });
    expect(skip.calls).toEqual(['before n', 'upgrade n', 'marked n r: budget ledger allows no eviction', 'after n true', 'notify none skipped-undrainable: budget ledger allows no eviction']);
    // Any other failure still stops the fleet.
    const broken = fakeDeps({ ended: { exitCode: 12, result: 'rollback-failed', error: { code: 'internal', message: 'kubelet did not start' } } });
    await expect(run(broken.deps, { undrainable: 'skip' })).rejects.toThrow('n: rollback-failed (exit 12)');
  });

  it('a node its transport cannot reach fails with the exit code the runbook gives it, and the fleet is told it failed', async () => {
    const { deps, calls } = fakeDeps({ unreachable: 'docker exec tb-n: Cannot connect to the Docker daemon' });
    await expect(run(deps, { fleet: 'p/s' })).rejects.toThrow('n: failed (exit 5): docker exec tb-n: Cannot connect to the Docker daemon');
    expect(calls.slice(2)).toEqual(['notify none failed (exit 5): docker exec tb-n: Cannot connect to the Docker daemon', 'fleet fleet-failed: node-maint p/s: failed: 1 failed; n: failed (exit 5): docker exec tb-n: Cannot connect to the Docker daemon']);
  });

  it('a failed wave tells the fleet\'s failure once, when its last running node has ended, with what became of each', async () => {
    const runs = new FleetRuns();
    const failing = fakeDeps({ ended: { exitCode: 11, result: 'rolled-back', error: { code: 'internal', message: 'kubelet did not start' } } as Partial<RunReport> });
    const fine = fakeDeps();
    let finish!: () => void;
    const slowAfter = { ...fine.deps, afterFleetNode: () => new Promise<void>((r) => (finish = r)) };
    const later = { names: ['c', 'd'], count: 3 };
    const second = runNode({ ...(inputs as object), node: 'b', fleet: 'p/s', later } as never, { deps: slowAfter, log: quiet, runs });
    await expect(runNode({ ...(inputs as object), node: 'a', fleet: 'p/s', later } as never, { deps: failing.deps, log: quiet, runs })).rejects.toThrow('a: rolled-back (exit 11): kubelet did not start');
    expect(failing.calls.filter((c) => c.startsWith('fleet'))).toEqual([]);
    await new Promise((r) => setTimeout(r, 10));
    finish();
    await second;
    expect(fine.calls.filter((c) => c.startsWith('fleet'))).toEqual([
      'fleet fleet-failed: node-maint p/s: failed: 1 rolled-back, 1 upgraded, 3 not-started; a: rolled-back (exit 11): kubelet did not start; not started, the fleet stopped: c, d and 1 more',
    ]);
  });
});

describe('a cancelled `pulumi up` in the provider', () => {
  it('a node waiting on the alert gate gives up at once: not started, cancelled; the fleet\'s story ends', async () => {
    const { deps, calls } = fakeDeps();
    const stop = new AbortController();
    // The gate waits as the real one does: until it may go, or the stop.
    const waiting = {
      ...deps,
      beforeFleetNode: (_i: unknown, _l: unknown, o?: { signal?: AbortSignal }) =>
        new Promise<never>((_r, reject) => (o?.signal?.aborted ? reject(new Error('stopped')) : o?.signal?.addEventListener('abort', () => reject(new Error('stopped'))))),
    };
    const run = runNode({ ...(inputs as object), fleet: 'p/s', later: { names: ['m'], count: 1 } } as never, { deps: waiting as NodeRunDeps, log: quiet, runs: new FleetRuns(), stop: stop.signal });
    stop.abort('a Ctrl-C or SIGTERM on `pulumi up`');
    await expect(run).rejects.toThrow('n: not started: cancelled by a Ctrl-C or SIGTERM on `pulumi up`');
    expect(calls.at(-1)).toMatch(/^fleet fleet-failed: .*n: not started: cancelled by a Ctrl-C/);
  });

  it('a node not yet started when the cancel came never starts; one under way is stopped by its runbook and said so', async () => {
    const stop = new AbortController();
    stop.abort('the end of its `pulumi` process');
    const cancelled = fakeDeps();
    await expect(runNode(inputs, { deps: cancelled.deps, log: quiet, runs: new FleetRuns(), stop: stop.signal })).rejects.toThrow('n: not started: cancelled by the end of its `pulumi` process');
    expect(cancelled.calls.some((c) => c.startsWith('upgrade'))).toBe(false);
    const stopped = fakeDeps({ ended: { exitCode: 18, result: 'stopped', error: { code: 'stopped', message: 'stopped by the end of its `pulumi` process: no further change was started' } } as Partial<RunReport> });
    await expect(run(stopped.deps)).rejects.toThrow('n: stopped (exit 18): stopped by the end of its `pulumi` process');
  });

  it('diff: a node with an unfinished run is a change even at its target versions', async () => {
    const olds = { node: 'n', targets: { containerd: '2' } } as never;
    expect((await diff('n', olds, { node: 'n', targets: { containerd: '2' }, observed: { containerd: '2' }, unfinished: 'run r1, running' } as never)).changes).toBe(true);
  });
});

describe('check and diff (pure: `pulumi preview` changes nothing)', () => {
  it('diff: no change when the node is already at the targets; a change when it drifted or targets moved', async () => {
    const olds = { node: 'n', targets: { containerd: '2' }, versionsAfter: { containerd: '2' } } as never;
    expect((await diff('n', olds, { node: 'n', targets: { containerd: '2' }, observed: { containerd: '2' } } as never)).changes).toBe(false);
    expect((await diff('n', olds, { node: 'n', targets: { containerd: '2' }, observed: { containerd: '1' } } as never)).changes).toBe(true);
    expect((await diff('n', olds, { node: 'n', targets: { containerd: '3' } } as never)).changes).toBe(true);
    expect((await diff('n', olds, { node: 'm', targets: { containerd: '2' } } as never)).replaces).toEqual(['node']);
  });

  it('diff: a node the fleet reboots is a change at its target versions; with no reboot wanted, none; no targets only for a rebooting fleet', async () => {
    const olds = { node: 'n', targets: {}, reboot: { policy: 'if-required', timeoutSeconds: 600 } } as never;
    const news = { node: 'n', targets: {}, observed: {}, reboot: { policy: 'if-required', timeoutSeconds: 600 } };
    expect((await diff('n', olds, news as never)).changes).toBe(false);
    expect((await diff('n', olds, { ...news, rebootWanted: '/var/run/reboot-required is there' } as never)).changes).toBe(true);
    // Through the agents, old facts that say "no reboot" leave the question to the node's run (issue 43 item 4).
    expect((await diff('n', olds, { ...news, rebootUnknown: 'no reboot required as of its facts' } as never)).changes).toBe(true);
    expect((await check(olds, news as never)).failures).toEqual([]);
    expect((await check(olds, { ...news, reboot: { policy: 'never', timeoutSeconds: 600 } } as never)).failures).toEqual([{ property: 'targets', reason: 'targets are required unless the fleet reboots or takes pending upgrades' }]);
    // With pendingUpgrades, a node with nothing pending has no targets, and is no change.
    const idle = { ...news, reboot: { policy: 'never', timeoutSeconds: 600 }, pendingUpgrades: {} };
    expect((await check(olds, idle as never)).failures).toEqual([]);
    expect((await diff('n', olds, idle as never)).changes).toBe(false);
  });

  it('diff: a window, a pause, an order or a gate set after a node is done is no change', async () => {
    const olds = { node: 'n', targets: { containerd: '2' }, leaseNamespace: 'kube-system', versionsAfter: { containerd: '2' } } as never;
    const news = { ...(inputs as object), observed: { containerd: '2' }, gates: { soakSeconds: 60, workloadsTimeoutSeconds: 60 } } as never;
    expect((await diff('n', olds, news)).changes).toBe(false);
  });

  it('check refuses inputs without a node or targets', async () => {
    expect((await check({} as never, { node: '', targets: {} } as never)).failures).toHaveLength(2);
  });
});
