import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bed, FAULTS_DIR, realNodeFingerprint, upgradeNode, waitFor } from './bed.js';
import { clearFault, containerdStatus, expectServing, realNode, report, setFault, upgradeArgs } from './faults.js';

// dpkg as it is on real nodes: held packages, a dpkg killed halfway, another apt holding the lock.
const t = realNode();

/** Holds dpkg's frontend lock with fcntl, as apt and unattended-upgrades do, for this many seconds. */
function holdDpkgLock(seconds: number): ChildProcess {
  const script = `use Fcntl; open(my $f, ">>", "/var/lib/dpkg/lock-frontend") or die; my $lk = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0); fcntl($f, F_SETLKW, $lk) or die "lock: $!"; sleep ${seconds}`;
  return spawn('perl', ['-e', script], { stdio: 'ignore' });
}

/** A power cut in the middle of the unpack: the runbook, apt and dpkg all die at once. */
async function killedDuringTheUnpack(version: string): Promise<void> {
  await setFault(t, 'preinst-slow');
  let killRun: (() => void) | undefined;
  const run = upgradeNode(upgradeArgs(t, version), { onStderr: (_text, kill) => (killRun ??= kill) });
  await waitFor(async () => existsSync(`${FAULTS_DIR}/preinst-started`), 300_000, 'the unpack to start');
  killRun!();
  await t.sh('pkill -KILL -x apt-get; pkill -KILL -x dpkg; true');
  expect((await run).code).toBe(128);
  await clearFault(t, 'preinst-slow');
}

const lockHeld = async (pid: number) => (await t.sh(`i=$(stat -c %i /var/lib/dpkg/lock-frontend); awk -v i=":$i" 'index($6, i) {print $5}' /proc/locks`)).includes(String(pid));

describe('dpkg interrupted, locked, held', () => {
  let locker: ChildProcess | undefined;
  beforeAll(async () => {
    await t.reset();
  });
  afterEach(async () => {
    locker?.kill('SIGKILL');
    locker = undefined;
    await t.reset();
  });

  it('SIGKILL of the run and of dpkg itself during the unpack: the same command repairs dpkg and finishes', async () => {
    const version = bed().containerd.faulty;
    await killedDuringTheUnpack(version);
    expect(await containerdStatus(t)).not.toMatch(/ [hi]i $/);

    const again = await upgradeNode(upgradeArgs(t, version));
    expect(again.code, again.stderr).toBe(0);
    const r = report(again);
    expect(r.mode).toBe('resume');
    expect(r.versions.after.containerd).toBe(version);
    expect((await t.sh('dpkg --audit; echo ok')).trim()).toBe('ok');
    await expectServing(t, version);
  });

  it('the same kill, then --rollback: the half-installed package is reinstalled at its prior version, held', async () => {
    await killedDuringTheUnpack(bed().containerd.faulty);
    // dpkg left the prior version half-installed: "already installed" to a plain apt-get install of that version.
    expect(await containerdStatus(t)).toMatch(new RegExp(`^${bed().containerd.old.replace(/[.+~]/g, '\\$&')} .H`));

    const back = await upgradeNode([t.name, '--rollback', '--output', 'json', ...t.flags]);
    expect(back.code, back.stderr).toBe(11);
    const r = report(back);
    expect(r.mode).toBe('rollback');
    expect(r.rollback.find((x: any) => x.step === 'upgrade-runtime').summary).toBe(`reinstalled containerd ${bed().containerd.old}`);
    await expectServing(t, bed().containerd.old);
  });

  it('the dpkg lock held by another process for 20 s: waited for, then the upgrade goes on', async () => {
    locker = holdDpkgLock(20);
    await waitFor(() => lockHeld(locker!.pid!), 10_000, 'the lock to be taken');
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(new RegExp(`waiting for the dpkg lock: held by PID ${locker.pid} \\(perl`));
    await expectServing(t, bed().containerd.new);
  });

  it('the dpkg lock held for longer than --lock-timeout: refused before anything changed, the holder named', async () => {
    locker = holdDpkgLock(600);
    await waitFor(() => lockHeld(locker!.pid!), 10_000, 'the lock to be taken');
    const before = await realNodeFingerprint();
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--lock-timeout', '10s']));
    expect(result.code, result.stderr).toBe(10);
    expect(result.stderr).toContain(`was not released in 10s (held by PID ${locker.pid} (perl`);
    expect(await realNodeFingerprint()).toEqual(before);
  });

  it('runtime packages held with apt-mark hold: upgraded and still held', async () => {
    expect(await containerdStatus(t)).toBe(`${bed().containerd.old} hi `);
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(0);
    expect(report(result).steps.find((s: any) => s.name === 'preflight').summary).toContain('held: containerd, docker.io (kept)');
    expect((await t.sh('apt-mark showhold')).split('\n').filter(Boolean).sort()).toEqual(['containerd', 'docker.io']);
    await expectServing(t, bed().containerd.new);
    // A finished run is never undone: --rollback now finds nothing to roll back and changes nothing.
    const before = await realNodeFingerprint();
    const back = await upgradeNode([t.name, '--rollback', '--output', 'json', ...t.flags]);
    expect(back.code, back.stderr).toBe(0);
    expect(report(back).next).toMatch(/no unfinished run on real-node to roll back \(the last one, .+, completed\): a finished run is never undone/);
    expect(await realNodeFingerprint()).toEqual(before);
  });
});
