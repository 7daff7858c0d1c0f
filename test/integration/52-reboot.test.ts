import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bed, bedDocker, DRAIN_FLAGS, kubectlJson, upgradeNode, waitFor } from './bed.js';
import { expectServing, FAULTS_DIR, lease, reinstalledFromKept, report, type Target } from './faults.js';
import { bootOf, pinnedDeployment, sshdHeldAtBoot, testDropIn, untilSshDown } from './fixtures.js';
import { OS_PATCH, osPatch, withOsPatchSource } from './os-patch.js';
import { onLeasedNode, useNamespace } from './pool.js';

// Reboots as a step of the run (kured's job): pool nodes reboot as machines do (`systemctl reboot` ends the node's
// systemd, its container exits and docker starts it again: /run empty, /var and the host key kept). Each case ends
// with a new boot identity (PID 1 started again: a container keeps the host's boot_id), the node Ready, schedulable,
// proven and clean; or, when it does not come back, cordoned and said.
const rebootArgs = (t: Target, extra: string[]) => [t.name, '--output', 'json', ...DRAIN_FLAGS, ...t.flags, '--reboot-timeout', '180s', ...extra];
/** The containerd version the node has now (the reset puts the old one back). */
const installed = async (t: Target) => (await t.sh("dpkg-query -W -f '${Version}' containerd")).trim();
/** apt's hook on the node, and where it writes kubelet's state at each dpkg run. */
const DPKG_HOOK = '/etc/apt/apt.conf.d/90node-maint-test-kubelet';
const KUBELET_AT_DPKG = '/var/log/node-maint-test-kubelet-at-dpkg';
/** Waits for the node's container to answer again (after a reboot a test asked for, or a start). */
const backUp = (t: Target) =>
  waitFor(async () => (await t.sh('systemctl is-system-running --wait >/dev/null 2>&1; systemctl is-active --quiet ssh && echo up').catch(() => '')).includes('up'), 180_000, `${t.name} up, its sshd too`);

describe('a reboot as a step of the run', () => {
  const ns = useNamespace();

  it.concurrent('--reboot-if-required on a docker node with pods: nothing without the sentinel (said); with it, drained, torn down, rebooted, proven on its new boot, the sentinel gone with /run; the pods come back', onLeasedNode('docker', async (t) => {
    await pinnedDeployment(ns.name, `reboot-${t.name}`, t.name, 3);
    const [version, boot] = [await installed(t), await bootOf(t)];
    const idle = await upgradeNode(rebootArgs(t, ['--reboot-if-required']));
    expect(idle.code, idle.stderr).toBe(0);
    const quiet = report(idle);
    expect(quiet.result).toBe('nothing-to-do');
    expect(quiet.steps.find((s: any) => s.name === 'preflight').summary).toContain('no reboot required');
    expect(quiet.steps.find((s: any) => s.name === 'reboot-node').summary).toBe('no reboot required');
    expect(await bootOf(t)).toBe(boot);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();

    await t.sh("printf 'linux-image-6.1.0-28-amd64\\n' > /var/run/reboot-required.pkgs && touch /var/run/reboot-required");
    const result = await upgradeNode(rebootArgs(t, ['--reboot-if-required']));
    expect(result.code, result.stderr).toBe(0);
    const r = report(result);
    expect(r).toMatchObject({ result: 'rebooted', reboot: { before: expect.stringMatching(new RegExp(`/${boot}$`)), after: expect.any(String) } });
    expect(r.reboot.after).not.toBe(r.reboot.before);
    expect(r.steps.find((s: any) => s.name === 'preflight').summary).toContain('reboot: /var/run/reboot-required is there (for linux-image-6.1.0-28-amd64)');
    expect(r.steps.find((s: any) => s.name === 'reboot-node').summary).toMatch(/^rebooted in \d+s \(boot /);
    expect(result.stderr).toContain(`waiting up to 180s for ${t.name} to come back on a new boot`);
    expect(await bootOf(t)).not.toBe(boot);
    expect((await t.sh('test -e /var/run/reboot-required && echo there || echo gone')).trim()).toBe('gone');
    await expectServing(t, version);
    await waitFor(async () => (await kubectlJson('get', 'pods', '-n', ns.name, '-l', `app=reboot-${t.name}`)).items.filter((p: any) => p.status.phase === 'Running').length === 3, 120_000, 'the pods running again');
  }));

  it.concurrent('SIGKILL of the run while the node is down: the same command at once waits for the node, finishes after the reboot, not again', onLeasedNode('docker', async (t) => {
    // Held, not slowed: a full suite once saw the new boot only after a 15 s sleep of sshd had ended.
    const sshd = await sshdHeldAtBoot(t);
    const [version, boot] = [await installed(t), await bootOf(t)];
    const restarts = Number(await bedDocker('inspect', '-f', '{{.RestartCount}}', t.container));
    const killed = await upgradeNode(rebootArgs(t, ['--reboot']), {
      onStderr: (text, kill) => {
        if (text.includes(`waiting up to 180s for ${t.name} to come back`)) kill();
      },
    });
    expect(killed.code).toBe(137);
    const journal = (await lease(t.name)).journal;
    expect(journal).toMatchObject({ status: 'running', reboot: { before: expect.stringMatching(new RegExp(`/${boot}$`)) } });
    expect(journal.steps['reboot-node'].status).toBe('applying');
    expect(journal.reboot.asked).toEqual(expect.any(String));
    // The same command at once, while the node does not answer: it waits for the new boot before it reads the node;
    // sshd is let go once it says so.
    let released: Promise<string> | undefined;
    let again;
    try {
      await untilSshDown(t, boot);
      again = await upgradeNode(rebootArgs(t, ['--reboot']), {
        onStderr: (text) => {
          if (!released && text.includes(`waiting up to 180s for ${t.name} to come back on a new boot`)) released = sshd.release();
        },
      });
    } finally {
      // Never left held: the reset takes the drop-in away, not a wait already under way at this boot.
      await (released ?? sshd.release());
    }
    expect(again.code, again.stderr).toBe(0);
    const r = report(again);
    expect(r).toMatchObject({ mode: 'resume', result: 'rebooted' });
    expect(again.stderr).toContain(`waiting up to 180s for ${t.name} to come back on a new boot`);
    expect(r.steps.find((s: any) => s.name === 'reboot-node').summary).toMatch(/^rebooted in \d+s/);
    // Rebooted once: docker restarted the node's container once, and the journal's boot said the node was past it.
    expect(Number(await bedDocker('inspect', '-f', '{{.RestartCount}}', t.container))).toBe(restarts + 1);
    expect(await bootOf(t)).not.toBe(boot);
    await expectServing(t, version, { afterRun: again });
  }));

  it.concurrent('a node that does not come back: exit 19 within --reboot-timeout, cordoned, nothing rolled back; once back, the same command finishes', onLeasedNode('docker', async (t) => {
    const version = await installed(t);
    // A machine that does not power on again: its container is not restarted, by docker or by a testbed/up meanwhile.
    const poweredOff = join(bed().run, 'powered-off', t.name);
    mkdirSync(dirname(poweredOff), { recursive: true });
    writeFileSync(poweredOff, '52-reboot.test.ts\n');
    await bedDocker('update', '--restart', 'no', t.container);
    let result;
    try {
      result = await upgradeNode([...rebootArgs(t, ['--reboot']), '--reboot-timeout', '60s']);
    } finally {
      await bedDocker('update', '--restart', 'unless-stopped', t.container);
      rmSync(poweredOff, { force: true });
    }
    expect(result.code, result.stderr).toBe(19);
    const r = report(result);
    expect(r.error.code).toBe('rebootTimeout');
    expect(r.error.message).toMatch(new RegExp(`^${t.name} did not come back within --reboot-timeout 60s of its reboot \\(it went down and has not answered since\\): it stays cordoned`));
    expect(r.next).toMatch(/stays cordoned; once it answers on a new boot, run the same command again to finish/);
    expect(r.rollback).toEqual([]);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBe(true);
    expect((await lease(t.name)).journal).toMatchObject({ status: 'running' });
    expect(await bedDocker('inspect', '-f', '{{.State.Running}}', t.container)).toBe('false');
    await bedDocker('start', t.container);
    await backUp(t);
    const again = await upgradeNode(rebootArgs(t, ['--reboot']));
    expect(again.code, again.stderr).toBe(0);
    expect(report(again)).toMatchObject({ mode: 'resume', result: 'rebooted' });
    await expectServing(t, version, { afterRun: again });
  }));

  it.concurrent('--to plus --reboot, Ctrl-C while the node reboots: stopped within seconds (exit 18), said, the Lease free; --rollback at once waits for the new boot, stops the kubelet systemd started at boot and tears down what it set up before containerd goes back (issue 36 item 1)', onLeasedNode('docker', async (t) => {
    const sshd = await sshdHeldAtBoot(t);
    const { old, new: target } = bed().containerd;
    expect(await installed(t)).toBe(old);
    const boot = await bootOf(t);
    // Kubelet's state at every dpkg run (apt's hook, kept by the reboot): the runtime is never reinstalled under it.
    await t.sh(`echo 'DPkg::Pre-Invoke { "systemctl is-active kubelet >> ${KUBELET_AT_DPKG} 2>&1 || true"; };' > ${DPKG_HOOK} && rm -f ${KUBELET_AT_DPKG}`);
    try {
      let sentAt = 0;
      const stopped = await upgradeNode(rebootArgs(t, ['--to', `containerd=${target}`, '--reboot']), {
        onStderr: (text, _kill, running) => {
          if (sentAt || !text.includes(`waiting up to 180s for ${t.name} to come back`)) return;
          sentAt = Date.now();
          running.signal('SIGINT');
        },
      });
      expect(stopped.code, stopped.stderr).toBe(18);
      expect(Date.now() - sentAt).toBeLessThan(30_000);
      const r = report(stopped);
      expect(r).toMatchObject({ result: 'stopped', error: { code: 'stopped' } });
      expect(r.error.message).toBe(`stopped by SIGINT: it gave up waiting for ${t.name} to come back from its reboot`);
      expect(r.next).toMatch(/^run the same command again to continue where it stopped \(from reboot-node\)/);
      expect(r.rollback).toEqual([]);
      // Not the units it had for the 2 s before the reboot took it down: that it reboots.
      expect(r.nodeNow).toEqual({ running: [], cordoned: true, rebooting: expect.stringMatching(/^the reboot this run asked at \S+, not yet seen on a new boot$/), unread: 'kubelet, the runtime and the packages not read while it reboots' });
      const l = await lease(t.name);
      expect(l.holder).toBeUndefined();
      expect(l.journal).toMatchObject({ status: 'running', stopped: { by: 'SIGINT', step: 'reboot-node' }, reboot: { before: expect.stringMatching(new RegExp(`/${boot}$`)) } });
      // The new boot's kubelet, enabled as every node's is, sets up the DaemonSet's pod while the node is still silent.
      await untilSshDown(t, boot);
      await waitFor(async () => Number((await t.sh('crictl pods --state ready -q 2>/dev/null | wc -l')).trim()) > 0, 120_000, `a pod sandbox made at boot on ${t.name}`);
      // --rollback at once, as the operator who pressed Ctrl-C would, while the node does not answer: the rollback waits
      // for its new boot before it undoes the steps that need it (kubelet, the runtime, the cordon).
      let released: Promise<string> | undefined;
      const back = await upgradeNode([...rebootArgs(t, ['--to', `containerd=${target}`, '--reboot']), '--rollback'], {
        onStderr: (text) => {
          if (!released && text.includes(`waiting up to 180s for ${t.name} to come back on a new boot`)) released = sshd.release();
        },
      });
      await released;
      expect(back.code, back.stderr).toBe(11);
      const b = report(back);
      expect(b.result).toBe('rolled-back');
      expect(b.rollback.map((x: any) => x.step)).toEqual(['reboot-node', 'upgrade-runtime', 'clear-state', 'teardown-sandboxes', 'stop-kubelet', 'cordon']);
      expect(b.rollback.filter((x: any) => x.status !== 'done')).toEqual([]);
      expect(b.rollback[0].summary).toMatch(new RegExp(`^${t.name} was rebooted: a reboot cannot be undone; started by systemd at boot, kubelet stopped for the runtime rollback; what kubelet set up meanwhile torn down: [1-9]\\d* attachment\\(s\\) torn down`));
      expect(b.rollback[1].summary).toMatch(reinstalledFromKept('containerd', old));
      expect(await bootOf(t)).not.toBe(boot);
      const atDpkg = (await t.sh(`cat ${KUBELET_AT_DPKG}`)).trim().split('\n');
      expect(atDpkg.length).toBeGreaterThanOrEqual(2);
      expect(atDpkg.filter((state) => state !== 'inactive'), 'kubelet at each dpkg run').toEqual([]);
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeFalsy();
      await expectServing(t, old);
    } finally {
      await sshd.release();
      await t.sh(`rm -f ${DPKG_HOOK} ${KUBELET_AT_DPKG}`);
    }
  }));

  it.concurrent('--to plus --reboot on a containerd node whose boot refuses logins for 20 s (/run/nologin, as systemd has it until boot ends): upgraded, then rebooted; the non-root user waits it out and finishes on its new boot at the new version (issue 36 item 8)', onLeasedNode('containerd', async (t) => {
    const { new: version } = bed().containerd;
    expect(bed().sshUser).not.toBe('root');
    // Systemd writes /run/nologin early at boot and systemd-user-sessions removes it once boot is done; here sshd
    // answers 20 s before that (started after systemd-user-sessions, which would otherwise remove the file at once).
    await testDropIn(t, 'ssh.service', ['ExecStartPre=/bin/sh -c "echo booting > /run/nologin && systemd-run --on-active=20 /bin/rm -f /run/nologin"', '[Unit]', 'After=systemd-user-sessions.service']);
    const boot = await bootOf(t);
    const result = await upgradeNode(rebootArgs(t, ['--to', `containerd=${version}`, '--reboot']));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('logins refused (/run/nologin while it boots?)');
    const r = report(result);
    expect(r.result).toBe('upgraded');
    expect(r.reboot.after).toBeDefined();
    const order = r.steps.map((s: any) => s.name);
    expect(order.indexOf('reboot-node')).toBe(order.indexOf('upgrade-runtime') + 1);
    expect(await bootOf(t)).not.toBe(boot);
    await expectServing(t, version, { afterRun: result });
  }));

  it.concurrent('a failure after the reboot, before uncordon (kubelet refuses the new containerd at every boot): the runtime rolled back, the rollback says the reboot cannot be undone; exit 11', onLeasedNode('containerd', async (t) => {
    const { faulty, old } = bed().containerd;
    // A fault that outlives the reboot (the bed's switches live in /run): a drop-in under /etc writes the switch before
    // each start of kubelet. The pool's reset removes it.
    await testDropIn(t, 'kubelet.service', [`ExecStartPre=/bin/sh -c "mkdir -p ${FAULTS_DIR} && echo ${faulty} > ${FAULTS_DIR}/kubelet-refuses-containerd"`]);
    const boot = await bootOf(t);
    const result = await upgradeNode(rebootArgs(t, ['--to', `containerd=${faulty}`, '--reboot', '--ready-timeout', '60s']));
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    expect(r.steps.find((s: any) => s.name === 'start-kubelet').status).toBe('failed');
    expect(r.reboot.after).toBeDefined();
    expect(await bootOf(t)).not.toBe(boot);
    // Undone from the failed step back (a drain that evicted nothing has nothing to undo), every undo done.
    expect(r.rollback.map((x: any) => x.step)).toEqual(['start-kubelet', 'reboot-node', 'upgrade-runtime', 'clear-state', 'teardown-sandboxes', 'stop-kubelet', 'cordon']);
    expect(r.rollback.filter((x: any) => x.status !== 'done')).toEqual([]);
    expect(r.rollback.find((x: any) => x.step === 'reboot-node').summary).toBe(`${t.name} was rebooted: a reboot cannot be undone`);
    await expectServing(t, old);
  }));

  it.concurrent('a node that comes back with other host keys (re-imaged): exit 6 at once, nothing more sent, nothing rolled back, cordoned, said; with its keys back, the same command finishes', onLeasedNode('docker', async (t) => {
    const version = await installed(t);
    // Re-imaged: from its next boot on, new host keys replace the ones the bed installs (a drop-in the pool's reset removes).
    const dropIn = await testDropIn(t, 'testbed-node.service', ['ExecStartPost=/bin/sh -c "rm -f /etc/ssh/ssh_host_* && ssh-keygen -A"']);
    let result;
    try {
      result = await upgradeNode(rebootArgs(t, ['--reboot']));
    } finally {
      // The keys the bed's known_hosts has, put back through docker (SSH refuses the new ones, as it must).
      const inNode = (script: string) => bedDocker('exec', t.container, 'sh', '-c', script);
      await waitFor(async () => (await inNode('systemctl is-active ssh').catch(() => '')) === 'active', 180_000, `${t.name}'s sshd`);
      await inNode(`rm -f ${dropIn} && systemctl daemon-reload && /usr/local/lib/node-maint-testbed/node-setup && systemctl restart ssh`);
    }
    expect(result.code, result.stderr).toBe(6);
    const r = report(result);
    expect(r.error).toMatchObject({ code: 'hostKey', message: expect.stringMatching(/^the host key of .*man-in-the-middle\)$/) });
    expect(r.rollback).toEqual([]);
    expect(r.next).toBe(`nothing more was sent to ${t.name} and nothing was rolled back: it stays cordoned. Find out why (a re-imaged node? another host?); once known_hosts has the key the node really has, run the same command again to finish (or roll back with --rollback)`);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBe(true);
    expect((await lease(t.name)).journal).toMatchObject({ status: 'running' });
    const again = await upgradeNode(rebootArgs(t, ['--reboot']));
    expect(again.code, again.stderr).toBe(0);
    expect(report(again)).toMatchObject({ mode: 'resume', result: 'rebooted' });
    await expectServing(t, version, { afterRun: again });
  }));

  it.concurrent('a reboot command that exits 0 and never reboots: exit 19 after --reboot-timeout; then the same command says so at once, and --rollback rolls back as before a reboot (issue 36 item 7)', onLeasedNode('any', async (t) => {
    const [version, boot] = [await installed(t), await bootOf(t)];
    const args = (extra: string[]) => rebootArgs(t, ['--reboot', '--reboot-command', 'true', ...extra]).map((a) => (a === '180s' ? '20s' : a));
    const first = await upgradeNode(args([]));
    expect(first.code, first.stderr).toBe(19);
    expect(report(first).error.message).toContain('it never went down: the reboot command did not reboot it');
    // The same command: not another 20 s of waiting for a reboot that never comes.
    const t0 = Date.now();
    const again = await upgradeNode(args([]));
    expect(again.code, again.stderr).toBe(19);
    expect(again.stderr).toContain(`${t.name} still answers on the boot it had when this run asked its reboot`);
    expect(report(again).error.message).toMatch(new RegExp(`^${t.name} did not reboot when this run asked it at \\S+ \\(\`true\` exited 0, and the node answered on the same boot for all of --reboot-timeout\\): not asked again with the same command`));
    expect(Date.now() - t0).toBeLessThan(15_000);
    const back = await upgradeNode(args(['--rollback']));
    expect(back.code, back.stderr).toBe(11);
    expect(report(back).result).toBe('rolled-back');
    expect(await bootOf(t)).toBe(boot);
    await expectServing(t, version);
  }));

  it.concurrent('a reboot command that fails (the node not rebooted): said at once with its output, rolled back as before a reboot; exit 11', onLeasedNode('any', async (t) => {
    const [version, boot] = [await installed(t), await bootOf(t)];
    const result = await upgradeNode(rebootArgs(t, ['--reboot', '--reboot-command', 'systemctl reboot --no-such-flag']));
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    const step = r.steps.find((s: any) => s.name === 'reboot-node');
    expect(step.status).toBe('failed');
    expect(r.error.message).toMatch(/^the reboot command exited 1 and the node did not reboot: systemctl reboot --no-such-flag: .*unrecognized option/);
    // Not after --reboot-timeout (180 s here): from the command's own outcome, a poll or two after it ended.
    expect(step.durationMs).toBeLessThan(60_000);
    expect(await bootOf(t)).toBe(boot);
    expect(r.result).toBe('rolled-back');
    expect(r.rollback.filter((x: any) => x.status !== 'done')).toEqual([]);
    await expectServing(t, version);
  }));

  it.concurrent('--pending-upgrades (issue 36): what apt has pending, the held runtime kept back, planned, installed and rolled back like --to; then with a reboot; nothing pending from another origin: nothing to do', onLeasedNode('docker', async (t) => {
    expect(t.held).toBe(true);
    const version = await installed(t);
    await withOsPatchSource(t, async () => {
      const pendingArgs = (extra: string[]) => [t.name, '--output', 'json', ...DRAIN_FLAGS, ...t.flags, '--pending-upgrades', ...extra];
      const none = await upgradeNode(pendingArgs(['--pending-origin', 'Debian-Security']));
      expect(none.code, none.stderr).toBe(0);
      expect(JSON.parse(none.stdout)).toMatchObject({ result: 'nothing-to-do', pendingUpgrades: {} });
      expect(none.stderr).toContain(`0 pending upgrade(s) on ${t.name} from Debian-Security`);
      // A failing after-upgrade hook: the pending upgrade is put back from the .deb the run kept.
      const failed = await upgradeNode(pendingArgs(['--hook-after-upgrade', 'exit 3']));
      expect(failed.code, failed.stderr).toBe(11);
      expect(failed.stderr).toContain(`1 pending upgrade(s) on ${t.name} (apt-get -s upgrade; held packages kept back): ${OS_PATCH}=1.0-2`);
      const r = report(failed);
      expect(r.versions.target).toEqual({ [OS_PATCH]: '1.0-2' });
      expect(r.rollback.find((x: any) => x.step === 'upgrade-runtime').summary).toMatch(new RegExp(reinstalledFromKept(OS_PATCH, '1.0-1').source.replace('_amd64', '_all')));
      expect(await osPatch(t)).toBe('1.0-1');
      const done = await upgradeNode(pendingArgs(['--reboot-timeout', '180s', '--reboot']));
      expect(done.code, done.stderr).toBe(0);
      expect(report(done)).toMatchObject({ result: 'upgraded', versions: { after: { [OS_PATCH]: '1.0-2' } }, reboot: { after: expect.any(String) } });
      expect(await osPatch(t)).toBe('1.0-2');
      expect(await installed(t)).toBe(version);
    });
    await expectServing(t, version);
  }));

  it.concurrent('--to with a package that is not the runtime\'s, beside containerd: one transaction, kept, put back by the rollback when the after-upgrade hook fails; alone, no runtime restart, then the reboot', onLeasedNode('containerd', async (t) => {
    const { new: containerd } = bed().containerd;
    await withOsPatchSource(t, async () => {
      const boot = await bootOf(t);
      const failed = await upgradeNode(rebootArgs(t, ['--to', `containerd=${containerd},${OS_PATCH}=1.0-2`, '--reboot', '--hook-after-upgrade', 'exit 3']));
      expect(failed.code, failed.stderr).toBe(11);
      const r = report(failed);
      expect(r.steps.find((s: any) => s.name === 'upgrade-runtime').actions).toEqual(expect.arrayContaining([`keep the .deb of ${OS_PATCH} 1.0-1 for a rollback`, `install ${OS_PATCH} 1.0-1 -> 1.0-2`]));
      expect(r.rollback.find((x: any) => x.step === 'upgrade-runtime')).toMatchObject({ status: 'done' });
      expect(await osPatch(t)).toBe('1.0-1');
      expect(await installed(t)).toBe(bed().containerd.old);
      expect(await bootOf(t)).toBe(boot);

      const done = await upgradeNode(rebootArgs(t, ['--to', `${OS_PATCH}=1.0-2`, '--reboot']));
      expect(done.code, done.stderr).toBe(0);
      // No stop and start of the runtime for a package that is not its own: the reboot starts everything anew.
      expect(report(done).steps.find((s: any) => s.name === 'upgrade-runtime').actions).toEqual([`keep the .deb of ${OS_PATCH} 1.0-1 for a rollback`, `install ${OS_PATCH} 1.0-1 -> 1.0-2`]);
      expect(report(done)).toMatchObject({ result: 'upgraded', versions: { before: { [OS_PATCH]: '1.0-1' }, after: { [OS_PATCH]: '1.0-2' } } });
      expect(await osPatch(t)).toBe('1.0-2');
      expect(await bootOf(t)).not.toBe(boot);
      await expectServing(t, bed().containerd.old, { afterRun: done });
    });
  }));
});
