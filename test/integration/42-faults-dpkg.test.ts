import { describe, expect, it } from 'vitest';
import { bed, upgradeNode, waitFor } from './bed.js';
import { clearFault, containerdStatus, expectServing, FAULTS_DIR, report, setFault, upgradeArgs, type Target, reinstalledFromKept } from './faults.js';
import { nodeFingerprint } from './fixtures.js';
import { onLeasedNode } from './pool.js';
import { notOffered, observeNode } from '../../src/fleet/observe.js';

// dpkg as it is on real nodes: held packages, a dpkg killed halfway, another apt holding the lock. Each case on a
// docker node of its own, leased for the case, from a reset node.
const onNode = (fn: (t: Target) => Promise<void>) => onLeasedNode('docker', fn);

/** Holds dpkg's frontend lock on the node with fcntl, as apt and unattended-upgrades do, for this many seconds. */
async function holdDpkgLock(t: Target, seconds: number): Promise<{ pid: number; release: () => Promise<unknown> }> {
  const script = `use Fcntl; open(my $f, ">>", "/var/lib/dpkg/lock-frontend") or die; my $lk = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0); fcntl($f, F_SETLKW, $lk) or die "lock: $!"; sleep ${seconds}`;
  const pid = Number((await t.sh(`setsid perl -e '${script}' </dev/null >/dev/null 2>&1 & echo $!`)).trim());
  await waitFor(() => lockHeld(t, pid), 10_000, 'the lock to be taken');
  return { pid, release: () => t.sh(`kill -KILL ${pid} 2>/dev/null; true`) };
}

const lockHeld = async (t: Target, pid: number) => (await t.sh(`i=$(stat -c %i /var/lib/dpkg/lock-frontend); awk -v i=":$i" 'index($6, i) {print $5}' /proc/locks`)).split('\n').includes(String(pid));

/** A power cut in the middle of the unpack: the runbook, apt and dpkg all die at once. */
async function killedDuringTheUnpack(t: Target, version: string): Promise<void> {
  await setFault(t, 'preinst-slow');
  let killRun: (() => void) | undefined;
  const run = upgradeNode(upgradeArgs(t, version), { onStderr: (_text, kill) => (killRun ??= kill) });
  await waitFor(async () => (await t.sh(`test -e ${FAULTS_DIR}/preinst-started && echo yes || true`)).trim() === 'yes', 300_000, 'the unpack to start');
  killRun!();
  await t.sh('pkill -KILL -x apt-get; pkill -KILL -x dpkg; true');
  expect((await run).code).toBe(137);
  await clearFault(t, 'preinst-slow');
}

describe('dpkg interrupted, locked, held', () => {
  it.concurrent('SIGKILL of the run and of dpkg itself during the unpack: the same command repairs dpkg and finishes', onNode(async (t) => {
    const version = bed().containerd.faulty;
    await killedDuringTheUnpack(t, version);
    expect(await containerdStatus(t)).not.toMatch(/ [hi]i $/);

    const again = await upgradeNode(upgradeArgs(t, version));
    expect(again.code, again.stderr).toBe(0);
    const r = report(again);
    expect(r.mode).toBe('resume');
    expect(r.versions.after.containerd).toBe(version);
    expect((await t.sh('dpkg --audit; echo ok')).trim()).toBe('ok');
    await expectServing(t, version, { afterRun: again });
  }));

  it.concurrent('the same kill, then --rollback: the half-installed package is reinstalled at its prior version, held', onNode(async (t) => {
    await killedDuringTheUnpack(t, bed().containerd.faulty);
    // dpkg left the prior version half-installed: "already installed" to a plain apt-get install of that version.
    expect(await containerdStatus(t)).toMatch(new RegExp(`^${bed().containerd.old.replace(/[.+~]/g, '\\$&')} .H`));

    const back = await upgradeNode([t.name, '--rollback', '--output', 'json', ...t.flags]);
    expect(back.code, back.stderr).toBe(11);
    const r = report(back);
    expect(r.mode).toBe('rollback');
    expect(r.rollback.find((x: any) => x.step === 'upgrade-runtime').summary).toMatch(reinstalledFromKept('containerd', bed().containerd.old));
    await expectServing(t, bed().containerd.old);
  }));

  it.concurrent('the dpkg lock held for longer than --lock-timeout: refused before anything changed, the holder named; a Ctrl-C in the wait is a stop, said as one (issue 36 item 6)', onNode(async (t) => {
    const locker = await holdDpkgLock(t, 600);
    try {
      const before = await nodeFingerprint(t);
      let sentAt = 0;
      const stopped = await upgradeNode(upgradeArgs(t, bed().containerd.new), {
        onStderr: (text, _kill, running) => {
          if (sentAt || !text.includes('waiting for the dpkg lock: held by')) return;
          sentAt = Date.now();
          running.signal('SIGINT');
        },
      });
      expect(stopped.code, stopped.stderr).toBe(18);
      expect(Date.now() - sentAt).toBeLessThan(10_000);
      expect(report(stopped).error.message).toBe(`stopped by SIGINT: it gave up waiting for the dpkg lock on ${t.name}`);
      expect(stopped.stderr).not.toContain('--lock-timeout');
      expect(await nodeFingerprint(t)).toEqual(before);
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--lock-timeout', '10s']));
      expect(result.code, result.stderr).toBe(10);
      expect(result.stderr).toContain(`was not released in 10s (held by PID ${locker.pid} (perl`);
      expect(await nodeFingerprint(t)).toEqual(before);
    } finally {
      await locker.release();
    }
  }));

  it.concurrent('runtime packages held with apt-mark hold, the dpkg lock held by another process for 20 s: waited for, upgraded and still held', onNode(async (t) => {
    expect(await containerdStatus(t)).toBe(`${bed().containerd.old} hi `);
    const locker = await holdDpkgLock(t, 20);
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(new RegExp(`waiting for the dpkg lock: held by PID ${locker.pid} \\(perl`));
    expect(report(result).steps.find((s: any) => s.name === 'preflight').summary).toContain('held: containerd, docker.io (kept)');
    expect((await t.sh('apt-mark showhold')).split('\n').filter(Boolean).sort()).toEqual(['containerd', 'docker.io']);
    await expectServing(t, bed().containerd.new, { afterRun: result });
    // A finished run is never undone: --rollback now finds nothing to roll back and changes nothing. The sandboxes the
    // upgrade left dead go first, as kubelet's garbage collection would take them (and their checkpoints) meanwhile.
    await t.sh('crictl pods --state notready -q | xargs -r crictl rmp >/dev/null 2>&1; true');
    const before = await nodeFingerprint(t);
    const back = await upgradeNode([t.name, '--rollback', '--output', 'json', ...t.flags]);
    expect(back.code, back.stderr).toBe(0);
    expect(report(back).next).toMatch(new RegExp(`no unfinished run on ${t.name} to roll back \\(the last one, .+, completed\\): a finished run is never undone`));
    expect(await nodeFingerprint(t)).toEqual(before);
  }));
});

describe("the fleet's look at a node its killed run left half-configured at the target", () => {
  it.concurrent('the sources are asked and offer the target: the node is planned, not refused for "not offered" (issue 36 item 10)', onNode(async (t) => {
    const { faulty } = bed().containerd;
    await setFault(t, 'postinst-fail');
    await t.sh(`DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-change-held-packages containerd=${faulty} >/dev/null 2>&1 || true`);
    await clearFault(t, 'postinst-fail');
    expect(await containerdStatus(t)).toMatch(/^\S+ i[FU] $/);
    const seen = await observeNode({ kind: 'docker-exec', container: t.container, dockerHost: bed().bedDockerHost }, undefined, { containerd: faulty });
    expect(seen.installed.containerd).toBe('not installed');
    expect(seen.offered.containerd).toContain(faulty);
    expect(notOffered(t.name, seen, { containerd: faulty })).toEqual([]);
  }));
});
