import { beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson, waitFor } from './bed.js';
import { pinnedDeployment } from './fixtures.js';
import { useNamespace, useNodes, type TestNode } from './pool.js';
import { configureBedFleet, newStack, type PulumiStack } from './pulumi.js';

// kured's job for a fleet: `reboot: if-required` reboots, one wave after the other, the nodes whose sentinel says so
// (unattended-upgrades writes /var/run/reboot-required), and leaves the others unchanged.
const FLEET = useNodes('any', 'any', 'any');
const ns = useNamespace();
const names = () => FLEET.map((n) => n.name);
const bootOf = async (t: TestNode) => (await t.sh(`sed 's/^.*) //' /proc/1/stat | cut -d' ' -f20`)).trim();

describe('pulumi up with reboot: if-required', () => {
  let stack: PulumiStack;

  beforeAll(async () => {
    stack = await newStack('fleet-reboot');
    await configureBedFleet(stack, names(), 1);
    await stack.run(['config', 'rm', 'node-maint:targets', '--config-file', stack.configFile]);
    await stack.set('reboot', 'if-required');
  });

  it('preview says which nodes need a reboot and why; up reboots those, in waves, and leaves the third unchanged', async () => {
    const [first, second, third] = FLEET as [TestNode, TestNode, TestNode];
    for (const t of [first, third]) await t.sh("printf 'linux-image-6.1.0-28-amd64\\n' > /var/run/reboot-required.pkgs && touch /var/run/reboot-required");
    const boots = await Promise.all(FLEET.map(bootOf));
    const preview = (await stack.run(['preview'])).stdout;
    expect(preview).toContain(`${first.name}: no package change; reboot: /var/run/reboot-required is there (for linux-image-6.1.0-28-amd64)`);
    expect(preview).toContain(`${second.name}: no package change; no reboot required`);
    expect(preview).toContain(`${third.name}: no package change; reboot: /var/run/reboot-required is there`);
    expect(await Promise.all(FLEET.map(bootOf))).toEqual(boots);

    // While the first node is maintained, the third (its turn to come) carries the fleet's PreferNoSchedule taint.
    const taintedWhile: string[][] = [];
    const taints = async (t: TestNode) => ((await kubectlJson('get', 'node', t.name)).spec.taints ?? []).filter((x: any) => x.key === 'node-maint.io/waiting').map((x: any) => `${x.value}:${x.effect}`);
    const running = stack.start(['up', '--yes', '--skip-preview']);
    await waitFor(async () => (await kubectlJson('get', 'node', first.name)).spec.unschedulable === true, 120_000, `${first.name} cordoned`);
    taintedWhile.push(await taints(first), await taints(second), await taints(third));
    expect(await running.done, running.output()).toBe(0);
    expect(running.output()).toMatch(new RegExp(`tainted ${first.name}, ${third.name} node-maint.io/waiting=node-maint.fleet-reboot:PreferNoSchedule until each one's run ends`));
    expect(taintedWhile).toEqual([['node-maint.fleet-reboot:PreferNoSchedule'], [], ['node-maint.fleet-reboot:PreferNoSchedule']]);
    for (const t of FLEET) expect(await taints(t)).toEqual([]);
    const outputs = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout);
    // One node at a time (maxUnavailable 1): never two rebooting at once.
    expect(outputs.waves).toEqual([[first.name], [second.name], [third.name]]);
    const { nodes } = outputs;
    expect([nodes[first.name].result, nodes[second.name].result, nodes[third.name].result]).toEqual(['rebooted', 'nothing-to-do', 'rebooted']);
    const after = await Promise.all(FLEET.map(bootOf));
    expect([after[0] !== boots[0], after[1] === boots[1], after[2] !== boots[2]]).toEqual([true, true, true]);
    for (const t of FLEET) expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();

    // The sentinels went with /run: a second up changes nothing.
    const again = await stack.run(['up', '--yes']);
    expect(again.stdout).not.toMatch(/\d+ (created|updated)/);
    expect(await Promise.all(FLEET.map(bootOf))).toEqual(after);
  });

  it('a blocking pod holds its node: past blockingPodTimeoutSeconds it is passed by (undrainable: skip), not rebooted; the other is', async () => {
    const [first, second, third] = FLEET as [TestNode, TestNode, TestNode];
    for (const t of [first, third]) await t.sh('touch /var/run/reboot-required');
    // As a killed `pulumi up` would have left it on a node this one does not maintain.
    await kubectl('taint', 'node', second.name, 'node-maint.io/waiting=node-maint.fleet-reboot:PreferNoSchedule');
    await pinnedDeployment(ns.name, 'blocker', third.name, 1);
    await stack.set('blockingPodSelector', 'app=blocker');
    await stack.set('blockingPodTimeoutSeconds', '15');
    await stack.set('undrainable', 'skip');
    const boots = await Promise.all([first, third].map(bootOf));
    const up = await stack.run(['up', '--yes', '--skip-preview']);
    const nodes = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout).nodes;
    expect([nodes[first.name].result, nodes[third.name].result], up.stdout).toEqual(['rebooted', 'skipped-undrainable']);
    expect(up.stdout + up.stderr).toMatch(new RegExp(`\\[${third.name}\\] held by blocking pod\\(s\\) ${ns.name}/blocker-[a-z0-9-]+ on ${third.name}`));
    const after = await Promise.all([first, third].map(bootOf));
    expect([after[0] !== boots[0], after[1] === boots[1]]).toEqual([true, true]);
    expect((await third.sh('test -e /var/run/reboot-required && echo there')).trim()).toBe('there');
    expect((await kubectlJson('get', 'node', third.name)).spec.unschedulable).toBeUndefined();
    for (const t of FLEET) expect((await kubectlJson('get', 'node', t.name)).spec.taints ?? []).not.toContainEqual(expect.objectContaining({ key: 'node-maint.io/waiting' }));
  });
});
