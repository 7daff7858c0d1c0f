import { describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, upgradeNode } from './bed.js';
import { expectServing, report, setFault, type Target, reinstalledFromKept } from './faults.js';
import { onLeasedNode } from './pool.js';
import { configureBedFleet, newStack } from './pulumi.js';

// The mission's main use: docker upgraded on a node where kubelet runs on cri-dockerd with kubenet. On docker nodes,
// through the real apt and real systemd (docker.socket too): docker.io from Debian's version to the bed's repack of
// it (a higher version, same binaries), held before and after; then a failing install of it rolled back to Debian's.
// Each case on a docker node of its own, leased for the case, from a reset node.
const onNode = (fn: (t: Target) => Promise<void>) => onLeasedNode('docker', fn);
const dockerArgs = (t: Target, version: string) => [t.name, '--to', `docker.io=${version}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags];
const dockerStatus = async (t: Target) => (await t.sh("dpkg-query -W -f='${Version} ${db:Status-Abbrev}' docker.io")).replace(/\n$/, '');
// The file dockerd runs and the package owning it, as the runbook checks them after the install.
const runningDockerd = async (t: Target) => (await t.sh('p=$(systemctl show -p MainPID docker | cut -d= -f2); readlink /proc/$p/exe; dpkg -S "$(readlink /proc/$p/exe)" | cut -d: -f1')).trim();

describe('docker.io upgraded and rolled back on docker nodes (cri-dockerd, kubenet)', () => {

  it.concurrent('upgrades docker.io through apt, still held; dockerd runs the new package; the node proven and clean', onNode(async (t) => {
    const result = await upgradeNode(dockerArgs(t, bed().docker.new));
    expect(result.code, result.stderr).toBe(0);
    const r = report(result);
    expect(r.steps.find((s: any) => s.name === 'upgrade-runtime').summary).toBe(`docker.io ${bed().docker.new}`);
    expect(await dockerStatus(t)).toBe(`${bed().docker.new} hi `);
    expect(await runningDockerd(t)).toBe('/usr/sbin/dockerd\ndocker.io');
    await expectServing(t, bed().containerd.old, { afterRun: result });
  }));

  it.concurrent('a docker.io install that fails (postinst) is rolled back to the version before, held; exit 11', onNode(async (t) => {
    await setFault(t, 'postinst-fail');
    const result = await upgradeNode(dockerArgs(t, bed().docker.new));
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    expect(r.result).toBe('rolled-back');
    expect(r.rollback.find((x: any) => x.step === 'upgrade-runtime').summary).toMatch(reinstalledFromKept('docker.io', bed().docker.old));
    expect(await dockerStatus(t)).toBe(`${bed().docker.old} hi `);
    await expectServing(t, bed().containerd.old);
  }));

  it.concurrent('pulumi up upgrades docker.io on the docker node of a fleet, and a second up changes nothing', onNode(async (t) => {
    const stack = await newStack('docker');
    await configureBedFleet(stack, [t.name], 1);
    await stack.set('targets', JSON.stringify({ 'docker.io': bed().docker.new }));
    await stack.run(['up', '--yes', '--skip-preview']);
    const outputs = stack.outputs();
    expect(outputs.nodes[t.name]).toMatchObject({ result: 'upgraded', versionsBefore: { 'docker.io': bed().docker.old }, versionsAfter: { 'docker.io': bed().docker.new }, audit: { findings: 0 } });
    expect(await dockerStatus(t)).toBe(`${bed().docker.new} hi `);
    expect(await runningDockerd(t)).toBe('/usr/sbin/dockerd\ndocker.io');
    expect((await stack.run(['up', '--yes', '--skip-preview'])).stdout).toMatch(/2 unchanged/);
  }));
});
