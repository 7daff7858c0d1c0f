import { describe, expect, it } from 'vitest';
import { notAtTarget, notRunningFromPackage, parseRunningBinaries, upstreamVersion, reportedRuntimeAtTargets } from '../../../src/node/runtime/binaries.js';

// Lines as the script printed them on the bed's real node; the others as kind and a not-restarted daemon look.
const REAL_NODE = [
  'containerd\t17938\t/usr/bin/containerd\tcontainerd\tcontainerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u2',
  'docker\t21833\t/usr/sbin/dockerd\tdocker.io\tDocker version 20.10.24+dfsg1, build 5d6db84',
  'cri-docker\t21938\t/usr/local/bin/cri-dockerd\t\tcri-dockerd 0.4.3 (HEAD)',
].join('\n');
const KIND = 'containerd\t120\t/usr/local/bin/containerd\t\tcontainerd github.com/containerd/containerd v2.1.1 abc';
const NOT_RESTARTED = 'containerd\t17938\t/usr/bin/containerd (deleted)\tcontainerd\tcontainerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3';

describe('the running runtime binaries', () => {
  it('are found by unit, with the package that owns each', () => {
    const found = parseRunningBinaries(REAL_NODE);
    expect(found.get('docker')).toMatchObject({ exe: '/usr/sbin/dockerd', owners: ['docker.io'], replaced: false });
    expect(found.get('cri-docker')!.owners).toEqual([]);
  });
  it('preflight: a package that does not provide the running daemon is named, with the file that runs', () => {
    expect(notRunningFromPackage(['containerd', 'docker.io', 'runc'], parseRunningBinaries(REAL_NODE))).toEqual([]);
    expect(notRunningFromPackage(['containerd'], parseRunningBinaries(KIND))).toEqual([
      'upgrading containerd would not change the running containerd: it runs /usr/local/bin/containerd, which no package owns',
    ]);
  });
  it('after the install: the daemon must run the new file and report the target version', () => {
    expect(notAtTarget({ containerd: '1.6.20~ds1-1+deb12u2', 'docker.io': '20.10.24+dfsg1-1+deb12u1+b6' }, parseRunningBinaries(REAL_NODE))).toEqual([]);
    expect(notAtTarget({ containerd: '1.6.20~ds1-1+deb12u3' }, parseRunningBinaries(NOT_RESTARTED))).toEqual([
      'containerd still runs the /usr/bin/containerd it started with, which the install replaced (not restarted)',
    ]);
    expect(notAtTarget({ 'docker.io': '24.0.5-1' }, parseRunningBinaries(REAL_NODE))[0]).toContain('reports "Docker version 20.10.24+dfsg1, build 5d6db84", not 24.0.5');
    expect(notAtTarget({ containerd: '1.6.20~ds1-1+deb12u3' }, new Map())).toEqual(['containerd (of containerd) is not running']);
    // The same upstream release, another Debian revision: containerd prints its revision, so it is held to it.
    expect(notAtTarget({ containerd: '1.6.20~ds1-1+deb12u3' }, parseRunningBinaries(REAL_NODE))).toEqual([
      'containerd reports "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u2", not 1.6.20~ds1-1+deb12u3 (containerd 1.6.20~ds1-1+deb12u3)',
    ]);
    expect(notAtTarget({ containerd: '1.6.20~ds1-1+deb12u2' }, parseRunningBinaries(REAL_NODE.replace('deb12u2', 'deb12u23')))).toHaveLength(1);
    // A package rebuilt or repacked on top of the version the binary was built as (a binNMU, a site's own suffix).
    expect(notAtTarget({ containerd: '1.6.20~ds1-1+deb12u2+nmtest1' }, parseRunningBinaries(REAL_NODE))).toEqual([]);
  });
  it('compares the upstream part of a Debian version', () => {
    expect(upstreamVersion('1:1.6.20~ds1-1+deb12u3')).toBe('1.6.20~ds1');
    expect(upstreamVersion('5:27.3.1-1~debian.12~bookworm')).toBe('27.3.1');
    expect(upstreamVersion('0.4.3')).toBe('0.4.3');
  });
});

describe('the runtime version the node reports (nodeInfo.containerRuntimeVersion)', () => {
  const containerd = { containerd: '1.6.20~ds1-1+deb12u3' };
  it('matches the target\'s upstream release', () => {
    expect(reportedRuntimeAtTargets('containerd://1.6.20', containerd)).toEqual({ status: 'matches' });
    expect(reportedRuntimeAtTargets('docker://20.10.24', { 'docker.io': '20.10.24+dfsg1-1+deb12u1+b6+nmtest1' })).toEqual({ status: 'matches' });
    expect(reportedRuntimeAtTargets('containerd://1.6.21-1', { 'containerd.io': '1.6.21-1' })).toEqual({ status: 'matches' });
  });
  it('differs when kubelet still talks to another version', () => {
    expect(reportedRuntimeAtTargets('containerd://1.6.2', containerd)).toMatchObject({ status: 'differs', message: 'the node reports containerd://1.6.2, not 1.6.20 (containerd 1.6.20~ds1-1+deb12u3)' });
    expect(reportedRuntimeAtTargets('containerd://1.6.200', containerd)).toMatchObject({ status: 'differs' });
  });
  it('says when the node reports no runtime, and when kubelet does not talk to the upgraded one', () => {
    expect(reportedRuntimeAtTargets('kwok-0.7.0', containerd)).toMatchObject({ status: 'unreported' });
    expect(reportedRuntimeAtTargets(undefined, containerd)).toMatchObject({ status: 'unreported' });
    expect(reportedRuntimeAtTargets('docker://20.10.24', containerd)).toEqual({ status: 'not-applicable' });
  });
});
