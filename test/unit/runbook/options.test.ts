import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/cli/duration.js';
import { DEFAULT_RUN_OPTIONS, parseTargets, validateNodeName, validateRunOptions } from '../../../src/runbook/options.js';
import { parseSystemctlShow } from '../../../src/node/service.js';

describe('input validation', () => {
  it('parses --to with Debian versions, with and without an epoch', () => {
    expect(parseTargets('containerd=1.6.20~ds1-1+deb12u3,docker.io=20.10.24+dfsg1-1+deb12u1+b6')).toEqual({
      containerd: '1.6.20~ds1-1+deb12u3',
      'docker.io': '20.10.24+dfsg1-1+deb12u1+b6',
    });
    expect(parseTargets('docker-ce=5:27.3.1-1~debian.12~bookworm')).toEqual({ 'docker-ce': '5:27.3.1-1~debian.12~bookworm' });
  });
  it.each(['containerd', 'containerd=', 'containerd=latest', 'containerd=1.6;rm -rf /', 'containerd=$(id)', 'Containerd=1.0', 'a=1,a=2'])('refuses %j', (spec) => {
    expect(() => parseTargets(spec)).toThrow();
  });
  it('refuses a Lease timing that cannot fence, and --rollback with --dry-run', () => {
    const base = { ...DEFAULT_RUN_OPTIONS, node: 'n', targets: { containerd: '1' } };
    expect(() => validateRunOptions({ ...base, lease: { durationSeconds: 15, renewDeadlineSeconds: 20, retryPeriodSeconds: 2 } })).toThrow(/renew deadline < duration/);
    expect(() => validateRunOptions({ ...base, rollback: true, dryRun: true })).toThrow(/--rollback and --dry-run/);
  });
  it('refuses node names and numbers that could not be real', () => {
    expect(() => validateNodeName('node;reboot')).toThrow(/invalid node name/);
    expect(validateNodeName('ip-10-0-0-1.ec2.internal')).toBe('ip-10-0-0-1.ec2.internal');
    expect(() => validateRunOptions({ ...DEFAULT_RUN_OPTIONS, node: 'n', targets: { containerd: '1' }, drain: { ...DEFAULT_RUN_OPTIONS.drain, gracePeriodSeconds: -5 } })).toThrow(/grace-period/);
  });
  it('reads kubectl durations', () => {
    expect(parseDuration('90', '--timeout')).toBe(90);
    expect(parseDuration('1h30m', '--timeout')).toBe(5400);
    expect(() => parseDuration('5 minutes', '--timeout')).toThrow(/invalid --timeout/);
  });
});

describe('units', () => {
  it('parses systemctl show from systemd and from the bed stand-in', () => {
    const s = parseSystemctlShow('cri-docker', 'LoadState=loaded\nActiveState=active\nMainPID=42\nExecStart={ path=/usr/bin/cri-dockerd ; argv[]=/usr/bin/cri-dockerd --network-plugin=kubenet ; ignore_errors=no ; }\n');
    expect(s).toEqual({ unit: 'cri-docker', loaded: true, active: true, mainPid: 42, execStart: '/usr/bin/cri-dockerd --network-plugin=kubenet' });
    expect(parseSystemctlShow('x', 'LoadState=not-found\nActiveState=inactive\nMainPID=0\n')).toMatchObject({ loaded: false, active: false });
  });
});
