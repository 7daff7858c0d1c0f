import { describe, expect, it } from 'vitest';
import { brokenPackages, changedAlongside, cleanVersions, debFileGlob, installScript, keepDebsScript, parseAvailableVersions, parseInstallSimulation, parseKeptDebs, parsePackageDb } from '../../../src/node/packages/index.js';
import { parseNodeState } from '../../../src/node/state/parse.js';

// dpkg-query -W -f='${Package}\t${Version}\t${db:Status-Abbrev}\n' lines as dpkg prints them (note the trailing space
// of the error column), after apt-mark hold and after dpkg was killed or failed at each stage.
const dpkg = [
  'containerd\t1.6.20~ds1-1+deb12u2\thi ',
  'docker.io\t20.10.24+dfsg1-1+deb12u1+b6\tii ',
  'runc\t1.1.5+ds1-1+deb12u1\tiU ',
  'cri-dockerd\t0.4.3\tiF ',
  'kubelet\t1.32.5\tiH ',
  'docker-ce\t\tun ',
  'containerd.io\t1.7.0\trc ',
];

describe('the package database', () => {
  const db = parsePackageDb(dpkg, ['4242\t/usr/bin/python3 /usr/bin/unattended-upgrade '], true);
  it('reads a held package as installed and held (apt-mark hold is what production nodes do)', () => {
    expect(db.records.containerd).toEqual({ version: '1.6.20~ds1-1+deb12u2', held: true, status: 'installed' });
    expect(cleanVersions(db)).toEqual({ containerd: '1.6.20~ds1-1+deb12u2', 'docker.io': '20.10.24+dfsg1-1+deb12u1+b6' });
  });
  it('never reads an unpacked, half-configured or half-installed package as installed at its version', () => {
    expect(cleanVersions(db).runc).toBeUndefined();
    expect(brokenPackages(db)).toEqual(['runc 1.1.5+ds1-1+deb12u1 (unpacked)', 'cri-dockerd 0.4.3 (half-configured)', 'kubelet 1.32.5 (half-installed)']);
    expect(db.records['containerd.io']!.status).toBe('config-files');
  });
  it('names who holds the dpkg lock and whether dpkg was interrupted', () => {
    expect(db.lockHolders).toEqual([{ pid: 4242, command: '/usr/bin/python3 /usr/bin/unattended-upgrade' }]);
    expect(db.interrupted).toBe(true);
  });
  it('compares versions with their epoch as apt-cache madison prints them', () => {
    const db2 = parsePackageDb(['docker-ce\t5:27.3.1-1~debian.12~bookworm\tii ', 'runc\t1.1.5+ds1-1+deb12u1\tii '], [], false);
    const available = parseAvailableVersions('docker-ce\t5:27.3.1-1~debian.12~bookworm\ndocker-ce\t5:27.4.0-1~debian.12~bookworm\nrunc\t1.1.5+ds1-1+deb12u1\n');
    expect(available.get('docker-ce')!.has(cleanVersions(db2)['docker-ce']!)).toBe(true);
    expect(available.get('runc')!.has(cleanVersions(db2).runc!)).toBe(true);
  });
  it('an RPM-based node has no package manager we support (preflight refuses it)', () => {
    expect(parseNodeState('@@tools\n|dnf\n|rpm\n|systemctl\n@@end\n').packageManager).toBeNull();
    expect(parseNodeState('@@tools\n|apt-get\n|dpkg-query\n@@end\n').packageManager).toBe('apt');
  });
  it('reads the gather sections into the node state', () => {
    const state = parseNodeState(`@@packages\n${dpkg.map((l) => `|${l}`).join('\n')}\n@@dpkg-locks\n|77\tapt-get install x\n@@dpkg-journal\n@@end\n`);
    expect(state.packages.containerd).toBe('1.6.20~ds1-1+deb12u2');
    expect(state.packages.runc).toBeUndefined();
    expect(state.packageDb.lockHolders[0]!.pid).toBe(77);
    expect(state.packageDb.interrupted).toBe(false);
  });
});

describe('the install script', () => {
  it('apt: changes held packages, holds them again whatever happens, waits for the lock, keeps config files, logs on the node', () => {
    const s = installScript({ containerd: '1.6.20~ds1-1+deb12u3' }, { hold: ['containerd', 'docker.io'], lockTimeoutSeconds: 90 });
    expect(s).toContain('--allow-change-held-packages');
    // A package half-installed at the wanted version (dpkg killed mid-unpack) is only repaired by a reinstall.
    expect(s).toContain('--reinstall');
    expect(s).toContain('-o DPkg::Lock::Timeout=90');
    expect(s).toContain('--force-confold');
    expect(s).toMatch(/apt-get install .*'containerd=1\.6\.20~ds1-1\+deb12u3' >>"\$log" 2>&1 \|\| rc=\$\?\napt-mark hold containerd docker\.io/);
    expect(s).toContain('dpkg --force-confold --force-confdef --configure -a');
    // Nothing of apt's output streams back: a lost session cannot kill it with SIGPIPE halfway through.
    for (const line of s.split('\n').filter((l) => /apt-get|apt-mark|dpkg /.test(l))) expect(line).toContain('>>"$log" 2>&1');
  });
});

describe("apt-get -s: what an install would change and remove", () => {
  // As apt 2.6 on bookworm prints them (the second from `apt-get -s install runc-`).
  const upgrade = 'NOTE: This is only a simulation!\nInst containerd [1.6.20~ds1-1+deb12u2] (1.6.20~ds1-1+deb12u3 Debian:12.15/oldstable [amd64])\nInst tini (0.19.0-1 Debian:12.15/oldstable [amd64])\nConf containerd (1.6.20~ds1-1+deb12u3 Debian:12.15/oldstable [amd64])\n';
  const removing = 'The following packages will be REMOVED:\n  containerd docker.io runc\nRemv docker.io [20.10.24+dfsg1-1+deb12u1+b6]\nRemv containerd [1.6.20~ds1-1+deb12u2]\nRemv runc [1.1.5+ds1-1+deb12u1]\n';
  it('reads each package changed, new ones with no prior version', () => {
    expect(parseInstallSimulation(upgrade)).toEqual({
      changes: [{ name: 'containerd', from: '1.6.20~ds1-1+deb12u2', to: '1.6.20~ds1-1+deb12u3' }, { name: 'tini', from: '', to: '0.19.0-1' }],
      removals: [],
    });
  });
  it('names what apt changes alongside the targets, at its version now (new packages are no rollback\'s to undo)', () => {
    const withRunc = `${upgrade}Inst runc [1.1.5+ds1-1+deb12u1] (1.1.12+ds1-1 Debian:12.15/oldstable [amd64])\n`;
    expect(changedAlongside(parseInstallSimulation(withRunc), { containerd: '1.6.20~ds1-1+deb12u3' })).toEqual({ runc: '1.1.5+ds1-1+deb12u1' });
    expect(changedAlongside(parseInstallSimulation(upgrade), { containerd: '1.6.20~ds1-1+deb12u3' })).toEqual({});
  });
  it('reads each package removed, with its version', () => {
    expect(parseInstallSimulation(removing).removals).toEqual([
      { name: 'docker.io', version: '20.10.24+dfsg1-1+deb12u1+b6' }, { name: 'containerd', version: '1.6.20~ds1-1+deb12u2' }, { name: 'runc', version: '1.1.5+ds1-1+deb12u1' },
    ]);
  });
});

describe('the prior versions kept as .deb files', () => {
  it("names the files as apt does (an epoch's colon as %3a)", () => {
    expect(debFileGlob('containerd.io', '1:1.7.2-1')).toBe('containerd.io_1%3a1.7.2-1_*.deb');
  });
  it('reads what was kept and what could not be', () => {
    expect(parseKeptDebs('kept containerd /var/lib/node-maint/backups/r/debs/containerd_1.6.20~ds1-1+deb12u2_amd64.deb\nmissing docker.io\n')).toEqual({
      kept: { containerd: '/var/lib/node-maint/backups/r/debs/containerd_1.6.20~ds1-1+deb12u2_amd64.deb' },
      missing: ['docker.io'],
    });
  });
  it('keeps them with plain sh: from apt\'s cache, else downloaded, said per package', () => {
    const script = keepDebsScript({ containerd: '1.6.20~ds1-1+deb12u2' }, '/var/lib/node-maint/backups/r/debs');
    expect(script).toContain('/var/cache/apt/archives/containerd_1.6.20~ds1-1+deb12u2_*.deb');
    expect(script).toContain("apt-get download -q 'containerd=1.6.20~ds1-1+deb12u2'");
  });
});

describe('a rollback from kept files', () => {
  it('installs the kept .deb in place of asking the sources for that version', () => {
    const script = installScript({ containerd: '1.6.20~ds1-1+deb12u2', runc: '1.1.5+ds1-1+deb12u1' }, { hold: [], lockTimeoutSeconds: 60, files: { containerd: '/var/lib/node-maint/backups/r/debs/containerd_1.6.20~ds1-1+deb12u2_amd64.deb' } });
    expect(script).toContain(" '/var/lib/node-maint/backups/r/debs/containerd_1.6.20~ds1-1+deb12u2_amd64.deb' runc=1.1.5+ds1-1+deb12u1 >>");
  });
});

describe('what a change of versions was, by dpkg\'s order (this machine\'s dpkg)', () => {
  it('names an upgrade, a downgrade, both at once, and none', async () => {
    const { execFileSync } = await import('node:child_process');
    const { changeKind, compareVersionsScript } = await import('../../../src/node/packages/index.js');
    const compare = (changes: Array<[string, string, string]>) => execFileSync('sh', ['-c', compareVersionsScript(changes)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map((l) => l.split(' ')[1]!);
    const old = '1.6.20~ds1-1+deb12u2';
    const next = '1.6.20~ds1-1+deb12u3';
    expect(changeKind(compare([['containerd', old, next]]))).toBe('upgraded');
    // The demo's second run, which the report used to call an upgrade.
    expect(changeKind(compare([['containerd', next, old]]))).toBe('downgraded');
    // A tilde sorts before anything, an epoch after everything: dpkg's order, not the alphabet's.
    expect(changeKind(compare([['containerd', '1.6.20', '1.6.20~rc1'], ['docker.io', '20.10.24', '1:20.10.0']]))).toBe('changed');
    expect(changeKind(compare([]))).toBe('maintained');
  });
});
