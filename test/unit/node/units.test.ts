import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { servicesOfUpgrade } from '../../../src/node/runtime/flavor.js';
import { parseUnitRuns, startUnitsScript, stopUnitsScript, unitRunsScript } from '../../../src/node/units.js';

// The scripts run by sh against a systemctl that records its calls: docker is socket-activated, containerd is not.
function runWithSystemctl(script: string, options: { socketEnabled?: boolean; failStop?: string } = {}): { calls: string[]; code: number } {
  const dir = mkdtempSync('/tmp/units-test-');
  writeFileSync(
    join(dir, 'systemctl'),
    `#!/bin/sh
echo "$*" >> ${dir}/calls
case "$1 $2 $3" in
  "show -p TriggeredBy") [ "$4" = docker ] && echo "TriggeredBy=docker.socket" || echo "TriggeredBy=" ;;
  "is-enabled docker.socket ") echo ${options.socketEnabled === false ? 'disabled' : 'enabled'} ;;
  "stop ${options.failStop ?? '-'} ") exit 1 ;;
esac
exit 0
`,
  );
  chmodSync(join(dir, 'systemctl'), 0o755);
  writeFileSync(join(dir, 'calls'), '');
  let code = 0;
  try {
    execFileSync('sh', ['-c', script], { env: { PATH: `${dir}:/usr/bin:/bin` } });
  } catch (e) {
    code = (e as { status: number }).status;
  }
  const calls = readFileSync(join(dir, 'calls'), 'utf8').split('\n').filter((l) => l && !l.startsWith('show') && !l.startsWith('is-enabled'));
  rmSync(dir, { recursive: true });
  return { calls, code };
}

describe('stopping and starting runtime units', () => {
  it('stops a socket-activated service\'s socket first, so no client revives it mid-upgrade', () => {
    expect(runWithSystemctl(stopUnitsScript(['docker', 'containerd'])).calls).toEqual(['stop docker.socket', 'stop docker', 'stop containerd']);
  });

  it('starts the service, then its socket again when the socket is enabled', () => {
    expect(runWithSystemctl(startUnitsScript(['containerd', 'docker'])).calls).toEqual(['start containerd', 'start docker', 'start docker.socket']);
    expect(runWithSystemctl(startUnitsScript(['docker']), { socketEnabled: false }).calls).toEqual(['start docker']);
  });

  it('fails when a socket cannot be stopped, and stops nothing after it', () => {
    const r = runWithSystemctl(stopUnitsScript(['docker', 'containerd']), { failStop: 'docker.socket' });
    expect(r.code).not.toBe(0);
    expect(r.calls).toEqual(['stop docker.socket']);
  });
});

describe('the services an upgrade restarts', () => {
  it('are the flavor\'s own plus the daemon of each target, in start order', () => {
    expect(servicesOfUpgrade('containerd', ['containerd'])).toEqual(['containerd']);
    expect(servicesOfUpgrade('containerd', ['docker.io'])).toEqual(['containerd', 'docker']);
    expect(servicesOfUpgrade('cri-dockerd', ['containerd'])).toEqual(['containerd', 'docker', 'cri-docker']);
  });
});

describe('whether a unit runs or will', () => {
  // As systemd 252 answers `show -p P --value`: a start queued behind another unit is inactive, with a job.
  const states: Record<string, [string, string]> = { a: ['active', ''], queued: ['inactive', '205'], retry: ['activating', '159'], down: ['inactive', ''], failed: ['failed', ''], going: ['deactivating', ''], mute: ['', ''] };
  it('calls a unit whose start the boot queued "starting", though is-active says inactive; one systemctl does not answer for, never "stopped"', () => {
    const dir = mkdtempSync('/tmp/units-test-');
    const cases = Object.entries(states).map(([u, [state, job]]) => `"show -p ActiveState --value ${u}") echo ${state} ;; "show -p Job --value ${u}") echo "${job}" ;;`);
    writeFileSync(join(dir, 'systemctl'), `#!/bin/sh\ncase "$*" in\n${cases.join('\n')}\nesac\n`);
    chmodSync(join(dir, 'systemctl'), 0o755);
    const out = execFileSync('sh', ['-c', unitRunsScript(Object.keys(states))], { env: { PATH: `${dir}:/usr/bin:/bin` } }).toString();
    rmSync(dir, { recursive: true });
    expect(Object.fromEntries(parseUnitRuns(out))).toEqual({ a: 'running', queued: 'starting', retry: 'starting', down: 'stopped', failed: 'stopped', going: 'stopping', mute: 'unknown' });
  });
});
