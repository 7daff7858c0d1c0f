import { describe, expect, it } from 'vitest';
import { bed, bedDocker, upgradeNode, waitFor } from './bed.js';
import { requesterKubeconfig, withAgent, withoutSsh } from './agent.js';
import { clearFault, expectServing, FAULTS_DIR, report, setFault, stepLine, upgradeArgs, type Target } from './faults.js';
import { bootOf, testDropIn } from './fixtures.js';
import { onLeasedNode } from './pool.js';

// A power cut under a run (issue 43 item 1): the node's container killed and started again, as a node that lost power
// and booted. On the new boot systemd starts the enabled kubelet, which sets up sandboxes again: what the run did
// before the cut is then not done, and whatever goes on with the run (the same process, the same command, the
// agent) stops kubelet again and tears down what the boot set up before it touches the runtime, or rolls back having
// done so. Watched on the node from the new boot on: no install while kubelet is active.

const WATCH = '/var/tmp/node-maint-test-install-under-kubelet';

/** The cut, and the node booted again (its systemd up). */
async function powerCut(t: Target): Promise<void> {
  const before = await bootOf(t);
  await bedDocker('kill', t.container);
  await new Promise((r) => setTimeout(r, 3_000));
  await bedDocker('start', t.container);
  await waitFor(async () => (await bootOf(t).catch(() => before)) !== before && /running|degraded|starting/.test(await t.sh('systemctl is-system-running || true').catch(() => '')), 120_000, `${t.name} booted`);
}

/** From now on, every 0.3 s on the node: dpkg unpacking or configuring while kubelet is active, written down. */
async function watchInstallsUnderKubelet(t: Target): Promise<() => Promise<string>> {
  await t.sh(`rm -f ${WATCH} ${WATCH}.stop; nohup sh -c 'while [ ! -e ${WATCH}.stop ]; do if pgrep -f "dpkg .*--(unpack|configure|install)" >/dev/null && systemctl is-active -q kubelet; then echo "$(date +%T) dpkg under an active kubelet" >> ${WATCH}; fi; sleep 0.3; done' >/dev/null 2>&1 &`);
  return async () => {
    await t.sh(`touch ${WATCH}.stop`);
    return (await t.sh(`cat ${WATCH} 2>/dev/null; rm -f ${WATCH} ${WATCH}.stop; true`)).trim();
  };
}

const unpackStarted = (t: Target) => waitFor(async () => (await t.sh(`test -e ${FAULTS_DIR}/preinst-started && echo yes || true`)).trim() === 'yes', 300_000, 'the unpack to start');

describe('a power cut under a run', () => {
  it.concurrent('over SSH, while dpkg unpacks (containerd): the run waits for the node, then for the runtime its boot starts late, stops the boot\'s kubelet and tears down its sandboxes again, then finishes the install, the audit clean', onLeasedNode('containerd', async (t) => {
    const version = bed().containerd.faulty;
    // At each start containerd waits for a gate (kept by a boot), opened once the run says it waits for the runtime:
    // the node answers SSH before its boot has started the runtime. The pool's reset removes the drop-in.
    const gate = '/var/lib/node-maint-test-containerd-gate';
    await testDropIn(t, 'containerd.service', [`ExecStartPre=/bin/sh -c "while [ -e ${gate} ]; do sleep 0.5; done"`, 'TimeoutStartSec=300']);
    await t.sh(`touch ${gate}`);
    await setFault(t, 'preinst-slow');
    await clearFault(t, 'preinst-started');
    let opened: Promise<string> | undefined;
    const first = upgradeNode(upgradeArgs(t, version), {
      onStderr: (text) => {
        if (!opened && text.includes('the container runtime is starting (containerd: a start queued by the boot)')) opened = t.sh(`rm -f ${gate}`);
      },
    });
    await unpackStarted(t);
    await powerCut(t);
    const installsUnderKubelet = await watchInstallsUnderKubelet(t);
    const cut = await first;
    await opened;
    await clearFault(t, 'preinst-slow');
    expect(cut.code, cut.stderr).toBe(0);
    expect(cut.stderr).toMatch(/does not answer since its session was lost .*; waiting up to 600s for it \(a power cut\?\)/);
    expect(cut.stderr).toMatch(/the container runtime is starting \(containerd: a start queued by the boot\): waiting up to 120s for it/);
    expect(report(cut)).toMatchObject({ undone: { why: 'boot', redone: ['stop-kubelet', 'teardown-sandboxes', 'clear-state'] }, audit: { verdict: 'clean' }, versions: { after: { containerd: version } } });
    expect(await installsUnderKubelet()).toBe('');
    await expectServing(t, version, { afterRun: cut });
  }));

  it.concurrent("over SSH, in the teardown (docker), the run killed with it, the boot's kubelet slow to start (behind the runtime): the same command cancels that start, tears down, then upgrades", onLeasedNode('docker', async (t) => {
    const version = bed().containerd.new;
    // At each start kubelet waits for a gate (kept by a boot): on the new boot systemd's start of it is under way,
    // "inactive" or "activating" to is-active, when the command is run again. The pool's reset removes the drop-in.
    const gate = '/var/lib/node-maint-test-kubelet-gate';
    await testDropIn(t, 'kubelet.service', [`ExecStartPre=/bin/sh -c "while [ -e ${gate} ]; do sleep 0.5; done"`, 'TimeoutStartSec=600']);
    await t.sh(`touch ${gate}`);
    let cut: Promise<void> | undefined;
    // The machine that ran it gone too: nothing of this process goes on after the cut.
    const first = await upgradeNode(upgradeArgs(t, version), {
      onStderr: (text, kill) => {
        if (cut || !text.includes(stepLine('teardown-sandboxes'))) return;
        kill();
        cut = powerCut(t);
      },
    });
    expect(first.code).toBe(137);
    await cut;
    // Run again once the node takes logins (sshd up, no /run/nologin): on a slow boot "booted" can come before that.
    const takesLogins = 'systemctl is-active -q ssh && ! test -e /run/nologin && echo up || true';
    await waitFor(async () => (await t.sh(takesLogins)).trim() === 'up', 120_000, `${t.name} taking logins`);
    expect((await t.sh('systemctl show -p ActiveState -p Job --value kubelet')).trim()).toMatch(/^(inactive|activating)\n\d+$/);
    const installsUnderKubelet = await watchInstallsUnderKubelet(t);
    // The gate opened once the run has stopped kubelet: a start the stop did not cancel would run kubelet from then on.
    let opened: Promise<string> | undefined;
    const again = await upgradeNode(upgradeArgs(t, version), {
      onStderr: (text) => {
        if (!opened && text.includes(stepLine('teardown-sandboxes'))) opened = t.sh(`rm -f ${gate}`);
      },
    });
    await opened;
    expect(again.code, again.stderr).toBe(0);
    const r = report(again);
    expect(r).toMatchObject({ mode: 'resume', undone: { why: 'boot', redone: ['stop-kubelet'] }, audit: { verdict: 'clean' } });
    expect(again.stderr).toMatch(/booted since it was worked on \(boot \S+ -> \S+\), not by this run: systemd starts kubelet at boot, which sets up sandboxes; done again before the runtime is touched: stop-kubelet/);
    expect(r.steps.find((s: any) => s.name === 'stop-kubelet')).toMatchObject({ status: 'done', summary: expect.stringMatching(/^kubelet stopped \(kubelet is starting .*: cancelled\)$/) });
    expect(r.steps.find((s: any) => s.name === 'teardown-sandboxes')).toMatchObject({ status: 'done', summary: expect.stringMatching(/torn down/) });
    expect(await installsUnderKubelet()).toBe('');
    await expectServing(t, version, { afterRun: again });
  }));

  // Both runtimes: the agent's own pod is a sandbox of the node's runtime, torn down again on the new boot.
  for (const flavour of ['docker', 'containerd'] as const) {
    it.concurrent(`through the agent, while dpkg unpacks (${flavour}): the agent, back on the new boot, continues the run from its journal; kubelet stopped and the boot's sandboxes (its own pod's too) torn down again before the install`, onLeasedNode(flavour, async (t) => {
      const version = bed().containerd.faulty;
      await withAgent(t, () => withoutSsh(t, async () => {
        await setFault(t, 'preinst-slow');
        await clearFault(t, 'preinst-started');
        const run = upgradeNode([t.name, '--via', 'agent', '--output', 'json', '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--grace-period', '5', '--kubeconfig', await requesterKubeconfig(), '--to', `containerd=${version}`]);
        await unpackStarted(t);
        await powerCut(t);
        const installsUnderKubelet = await watchInstallsUnderKubelet(t);
        const r = await run;
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).toMatch(new RegExp(`node-maint agent: ${t.name} is up on a new boot, and its journal says run [\\w-]+ is unfinished \\(running\\): continuing it`));
        expect(report(r)).toMatchObject({ mode: 'resume', undone: { why: 'boot', redone: ['stop-kubelet', 'teardown-sandboxes', 'clear-state'] }, audit: { verdict: 'clean' }, versions: { after: { containerd: version } } });
        expect(await installsUnderKubelet()).toBe('');
      }));
      await expectServing(t, version);
    }));
  }
});
