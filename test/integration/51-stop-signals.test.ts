import { describe, expect, it } from 'vitest';
import { applyObjects, bed, kubectl, kubectlJson, upgradeNode, waitFor, type CliResult } from './bed.js';
import { clearFault, expectServing, FAULTS_DIR, lease, report, setFault, stepLine, upgradeArgs, type Target } from './faults.js';
import { pinnedDeployment, pinnedPodSpec } from './fixtures.js';
import { onLeasedNode, useNamespace } from './pool.js';

// An operator stops a run as operators do: Ctrl-C in a terminal (SIGINT to the whole process group), SIGTERM from a CI
// job's timeout or a service manager, SIGHUP from a closed session, Ctrl-C twice. Each case stops a run at a step of
// its own, then checks what the operator is told and what the node is left as, then continues or rolls back.

interface Stopped {
  result: CliResult;
  /** From the first signal to the process's end. */
  msToEnd: number;
}

/**
 * Runs the upgrade and, once `line` appears on its stderr, `delayMs` later (and once `when` holds, if given), sends
 * `signals` to its process group, `apartMs` apart (or at the times `at` says).
 */
async function upgradeStoppedAt(t: Target, version: string, line: string, signals: NodeJS.Signals[], { delayMs = 0, when = async () => true, apartMs = 300, at = undefined as number[] | undefined } = {}): Promise<Stopped> {
  let sentAt = 0;
  const result = await upgradeNode(upgradeArgs(t, version), {
    onStderr: (text, _kill, running) => {
      if (sentAt || !text.includes(line)) return;
      sentAt = -1;
      void (async () => {
        await new Promise((r) => setTimeout(r, delayMs));
        await waitFor(when, 120_000, 'the moment to stop');
        sentAt = Date.now();
        signals.forEach((s, i) => setTimeout(() => running.signal(s), at?.[i] ?? i * apartMs));
      })();
    },
  });
  expect(sentAt, `never saw ${JSON.stringify(line)}:\n${result.stderr}`).toBeGreaterThan(0);
  return { result, msToEnd: Date.now() - sentAt };
}

/** What every single stop ends with: exit 18 within 30 s, the words on stderr and in the JSON, the Lease free, the run unfinished. */
async function expectStopped(t: Target, { result, msToEnd }: Stopped, signal: string, step: string) {
  expect(result.code, result.stderr).toBe(18);
  expect(msToEnd).toBeLessThan(30_000);
  expect(result.stderr).toContain(`node-maint: ${signal} received: stopping at the next safe point`);
  const r = report(result);
  expect(r).toMatchObject({ result: 'stopped', exitCode: 18, error: { code: 'stopped' } });
  expect(r.error.message).toMatch(new RegExp(`^stopped by ${signal}`));
  expect(r.next).toMatch(/^run the same command again to continue where it stopped \((from|before) .+\), or run it with --rollback to undo what the run did$/);
  expect(r.nodeNow.cordoned).toBe(true);
  const l = await lease(t.name);
  expect(l.holder).toBeUndefined();
  expect(l.journal).toMatchObject({ status: 'running', stopped: { by: signal, step } });
  return r;
}

/** `fn` with dpkg's unpack made slow (the fault hook's 30 s); `unpacking` says when dpkg is in the middle of it. */
async function duringSlowUnpack(t: Target, fn: (unpacking: () => Promise<boolean>) => Promise<void>): Promise<void> {
  await clearFault(t, 'preinst-started');
  await setFault(t, 'preinst-slow');
  try {
    await fn(async () => (await t.sh(`test -e ${FAULTS_DIR}/preinst-started && echo yes || true`)).trim() === 'yes');
  } finally {
    await clearFault(t, 'preinst-slow');
  }
}

/** The runtime's units as systemd has them now. */
const runtimeActive = async (t: Target) => (await t.sh(`systemctl is-active containerd ${t.flavour === 'docker' ? 'docker cri-docker' : ''} || true`)).trim().split('\n');

describe('an operator stops a run', () => {
  const ns = useNamespace();
  it.concurrent('Ctrl-C (SIGINT to the process group) in the drain: stopped in it, cordoned; the same command finishes', onLeasedNode('docker', async (t) => {
    const { new: version } = bed().containerd;
    await pinnedDeployment(ns.name, `drain-${t.name}`, t.name, 2);
    const stopped = await upgradeStoppedAt(t, version, stepLine('drain'), ['SIGINT'], { delayMs: 500 });
    const r = await expectStopped(t, stopped, 'SIGINT', 'drain');
    expect(r.steps.find((s: any) => s.name === 'drain').status).toBe('stopped');
    expect(r.nodeNow).toMatchObject({ kubelet: 'running', running: [] });
    expect(stopped.result.stderr).toContain('STOPPED after');
    expect(r.rollback).toEqual([]);
    expect(await runtimeActive(t)).toEqual(['active', 'active', 'active']);
    const again = await upgradeNode(upgradeArgs(t, version));
    expect(again.code, again.stderr).toBe(0);
    expect(report(again)).toMatchObject({ result: 'upgraded', mode: 'resume' });
    await expectServing(t, version, { afterRun: again });
  }));

  it.concurrent('Ctrl-C while a PodDisruptionBudget allows nothing (the drain then writes nothing a fence could refuse): stopped within 30 s, not at --timeout', onLeasedNode('any', async (t) => {
    const { new: version } = bed().containerd;
    const app = `held-${t.name}`;
    // Two bare pods under a budget of one: the first eviction spends it, and nothing ever replaces the pod it took.
    const pod = (i: number) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `${app}-${i}`, namespace: ns.name, labels: { app } }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } });
    const budget = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: app, namespace: ns.name }, spec: { minAvailable: 1, selector: { matchLabels: { app } } } };
    await applyObjects([pod(1), pod(2), budget]);
    await waitFor(async () => (await kubectlJson('get', 'pdb', '-n', ns.name, app)).status?.disruptionsAllowed === 1, 120_000, 'the budget allowing one');
    const atZero = async () => (await kubectlJson('get', 'pdb', '-n', ns.name, app)).status?.disruptionsAllowed === 0 && (await kubectlJson('get', 'pods', '-n', ns.name, '-l', `app=${app}`)).items.length === 1;
    try {
      const stopped = await upgradeStoppedAt(t, version, stepLine('drain'), ['SIGINT'], { when: atZero });
      const r = await expectStopped(t, stopped, 'SIGINT', 'drain');
      expect(r.error.message).toBe(`stopped by SIGINT: it gave up waiting for PodDisruptionBudget ${ns.name}/${app} (1 pod(s) not evicted)`);
      expect(r.nodeNow).toMatchObject({ kubelet: 'running' });
      const back = await upgradeNode(['--rollback', ...upgradeArgs(t, version)]);
      expect(back.code, back.stderr).toBe(11);
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    } finally {
      await kubectl('-n', ns.name, 'delete', 'pdb', app, '--ignore-not-found');
    }
  }));

  it.concurrent('SIGTERM to the npx the run was started with (npx ends at once and passes nothing on): the run sees its parent end and stops at a safe point; --rollback undoes it', onLeasedNode('any', async (t) => {
    const { old, new: version } = bed().containerd;
    await pinnedDeployment(ns.name, `npx-${t.name}`, t.name, 2);
    let sent = 0;
    const result = await upgradeNode(upgradeArgs(t, version), {
      via: ['npx', 'zx'],
      onStderr: (text, _kill, running) => {
        if (sent || !text.includes(stepLine('drain'))) return;
        sent = Date.now();
        running.signalStarted('SIGTERM');
      },
    });
    // The output ends when the run does (it keeps npx's pipes): the run said why it stopped, and stopped.
    expect(sent).toBeGreaterThan(0);
    expect(Date.now() - sent).toBeLessThan(30_000);
    expect(result.stderr).toMatch(/node-maint: its parent process \(PID \d+\) ended without passing a signal on/);
    expect(report(result)).toMatchObject({ result: 'stopped', exitCode: 18 });
    const l = await lease(t.name);
    expect(l.holder).toBeUndefined();
    expect(l.journal).toMatchObject({ status: 'running', stopped: { by: 'the end of its parent process' } });
    // Stopped in the drain, nothing installed: the rollback uncordons (a resume would install, and the next reset undo it).
    const back = await upgradeNode([...upgradeArgs(t, version), '--rollback']);
    expect(back.code, back.stderr).toBe(11);
    await expectServing(t, old);
  }));

  it.concurrent("a CI runner's cancel during apt (SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after): the stop is recorded and the Lease freed before the SIGKILL", onLeasedNode('containerd', async (t) => {
    const { old, faulty } = bed().containerd;
    await duringSlowUnpack(t, async (unpacking) => {
      // As GitHub Actions cancels a job: the SIGTERM comes inside the 15 s the install under way is given.
      const stopped = await upgradeStoppedAt(t, faulty, stepLine('upgrade-runtime'), ['SIGINT', 'SIGTERM', 'SIGKILL'], { when: unpacking, at: [0, 7_500, 10_000] });
      expect(stopped.result.stderr).toContain('node-maint: SIGTERM received after SIGINT: finishing the stop now');
      expect(stopped.result.code, stopped.result.stderr).toBe(18);
      expect(stopped.msToEnd).toBeLessThan(10_000);
      const l = await lease(t.name);
      expect(l.holder).toBeUndefined();
      expect(l.journal).toMatchObject({ status: 'running', stopped: { by: 'SIGINT', step: 'upgrade-runtime' } });
      const back = await upgradeNode([...upgradeArgs(t, faulty), '--rollback']);
      expect(back.code, back.stderr).toBe(11);
    });
    await expectServing(t, old);
  }));

  it.concurrent('Ctrl-C during apt (a slow unpack): the install goes on on the node and starts the runtime; --rollback waits for it, then undoes the run', onLeasedNode('containerd', async (t) => {
    const { old, faulty } = bed().containerd;
    await duringSlowUnpack(t, async (unpacking) => {
      const stopped = await upgradeStoppedAt(t, faulty, stepLine('upgrade-runtime'), ['SIGINT'], { when: unpacking });
      const r = await expectStopped(t, stopped, 'SIGINT', 'upgrade-runtime');
      // The truth as it stopped: the install still under way, named, with its deadline.
      expect(r.nodeNow.running).toEqual([expect.stringMatching(/^PID \d+ \(install containerd=.+; its timeout ends it by .+\)$/)]);
      expect(r.error.message).toContain('was still running after 15s and goes on on the node until it ends');
      const back = await upgradeNode([...upgradeArgs(t, faulty), '--rollback']);
      expect(back.code, back.stderr).toBe(11);
      expect(back.stderr).toMatch(/waiting for this run's command\(s\) still running on the node from its earlier process: PID \d+ \(install containerd=/);
      expect(report(back).result).toBe('rolled-back');
    });
    expect(await runtimeActive(t)).toEqual(['active']);
    await expectServing(t, old);
  }));

  it.concurrent('Ctrl-C in start-kubelet: kubelet left running; the same command finishes', onLeasedNode('containerd', async (t) => {
    const { new: version } = bed().containerd;
    await setFault(t, 'kubelet-start-delay', '20');
    try {
      const stopped = await upgradeStoppedAt(t, version, stepLine('start-kubelet'), ['SIGINT'], { delayMs: 1_000 });
      const r = await expectStopped(t, stopped, 'SIGINT', 'start-kubelet');
      expect(r.nodeNow).toMatchObject({ runtime: { containerd: 'running' }, packages: { containerd: version } });
    } finally {
      await clearFault(t, 'kubelet-start-delay');
    }
    const again = await upgradeNode(upgradeArgs(t, version));
    expect(again.code, again.stderr).toBe(0);
    await expectServing(t, version, { afterRun: again });
  }));

  it.concurrent('SIGTERM in the teardown: kubelet stopped, said; --rollback starts it and uncordons', onLeasedNode('docker', async (t) => {
    const { old, new: version } = bed().containerd;
    const stopped = await upgradeStoppedAt(t, version, stepLine('teardown-sandboxes'), ['SIGTERM']);
    const r = await expectStopped(t, stopped, 'SIGTERM', r0(stopped));
    expect(r.nodeNow).toMatchObject({ kubelet: 'stopped', runtime: { containerd: 'running', docker: 'running', 'cri-docker': 'running' }, packages: { containerd: old } });
    const back = await upgradeNode([...upgradeArgs(t, version), '--rollback']);
    expect(back.code, back.stderr).toBe(11);
    await expectServing(t, old);
  }));

  it.concurrent('SIGHUP (the session closed): stopped the same way; the same command finishes', onLeasedNode('any', async (t) => {
    const { new: version } = bed().containerd;
    const stopped = await upgradeStoppedAt(t, version, stepLine('clear-state'), ['SIGHUP']);
    await expectStopped(t, stopped, 'SIGHUP', r0(stopped));
    const again = await upgradeNode(upgradeArgs(t, version));
    expect(again.code, again.stderr).toBe(0);
    await expectServing(t, version, { afterRun: again });
  }));

  it.concurrent('Ctrl-C twice during apt: the second ends the process at once, the journal intact; the same command waits for the install, takes over and finishes', onLeasedNode('containerd', async (t) => {
    const { faulty } = bed().containerd;
    await duringSlowUnpack(t, async (unpacking) => {
      // The first SIGINT waits for the install (its grace); the second, a second later, does not wait.
      const { result, msToEnd } = await upgradeStoppedAt(t, faulty, stepLine('upgrade-runtime'), ['SIGINT', 'SIGINT'], { when: unpacking, apartMs: 1_000 });
      expect(result.code, result.stderr).toBe(130);
      expect(msToEnd).toBeLessThan(5_000);
      expect(result.stderr).toContain('node-maint: SIGINT received again: ending now. The journal on the node\'s Lease is intact');
      expect((await lease(t.name)).journal).toMatchObject({ status: 'running', steps: { 'upgrade-runtime': { status: 'applying' } } });
      const again = await upgradeNode(upgradeArgs(t, faulty));
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toContain('taking over the Lease from');
      expect(again.stderr).toMatch(/waiting for this run's command\(s\) still running on the node from its earlier process: PID \d+ \(install containerd=/);
      expect(report(again).rollback).toEqual([]);
    });
    await expectServing(t, faulty);
  }));
});

/** The step the stop landed in: the one the report marks stopped, else "before" the next one. */
function r0({ result }: Stopped): string {
  const steps = report(result).steps as Array<{ name: string; status: string }>;
  return steps.find((s) => s.status === 'stopped')?.name ?? `before ${steps.find((s) => s.status === 'not-run')?.name}`;
}
