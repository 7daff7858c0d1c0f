import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlJson, waitFor, watchNodeLabel } from './bed.js';
import { bootOf, pinnedDeployment } from './fixtures.js';
import { OS_PATCH, OS_PATCH_ORIGIN, osPatch, withOsPatchSource } from './os-patch.js';
import { useNamespace, useNodes, type TestNode } from './pool.js';
import { configureBedFleet, newStack, type PulumiStack } from './pulumi.js';
import { webhookReceiver } from './webhook.js';

// kured's job for a fleet: `reboot: if-required` reboots, one wave after the other, the nodes whose sentinel says so
// (unattended-upgrades writes /var/run/reboot-required), and leaves the others unchanged.
const FLEET = useNodes('any', 'any', 'any');
const ns = useNamespace();
const names = () => FLEET.map((n) => n.name);
/** The node's node-maint marks: its state label, its annotations, and the Events of its last run ("Reason: message"). */
async function marksOf(t: TestNode) {
  const node = await kubectlJson('get', 'node', t.name);
  const annotations = Object.fromEntries(Object.entries(node.metadata.annotations ?? {}).filter(([k]) => k.startsWith('node-maint.io/')));
  const runId = annotations['node-maint.io/run-id'];
  const events = (await kubectlJson('get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${t.name},source=node-maint`)).items
    .filter((e: any) => e.reportingInstance === runId)
    .sort((a: any, b: any) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp))
    .map((e: any) => `${e.reason}: ${e.message}`);
  return { state: node.metadata.labels?.['node-maint.io/state'], annotations, events };
}

describe('pulumi up with reboot: if-required', () => {
  let stack: PulumiStack;
  let hook: Awaited<ReturnType<typeof webhookReceiver>>;

  beforeAll(async () => {
    hook = await webhookReceiver();
    stack = await newStack('fleet-reboot');
    await configureBedFleet(stack, names(), 1);
    stack.unset('targets');
    await stack.set('reboot', 'if-required');
    // The fleet's own reboot command (the CLI's --reboot-command).
    await stack.set('rebootCommand', 'systemctl --no-wall reboot');
    await stack.set('webhook', hook.url, true);
  });
  afterAll(() => void hook.server.close());

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
    // The states the first node's label takes while it is maintained: a reboot alone never says `upgrading`.
    const watch = watchNodeLabel(first.name, 'node-maint.io/state');
    expect(await running.done, running.output()).toBe(0);
    const states = watch.stop();
    expect(states.includes('rebooting') && !states.includes('upgrading'), states.join(', ')).toBe(true);
    // A `pulumi up` nobody stopped says nothing of a Cancel (the engine cancels its providers as every update ends).
    expect(running.output()).not.toContain("the engine's Cancel");
    // Its words and marks name a reboot, not versions it did not change (issue 36 item 9).
    const marks = await marksOf(first);
    expect(marks.state).toBe('done');
    expect(marks.annotations).not.toHaveProperty('node-maint.io/from');
    expect(marks.annotations).not.toHaveProperty('node-maint.io/to');
    expect(marks.events.filter((e: string) => !e.startsWith('Drained: '))).toEqual([
      `MaintenanceStarted: node-maint run ${marks.annotations['node-maint.io/run-id']}: a reboot, no package changed`,
      expect.stringMatching(/^Rebooted: rebooted in \d+s \(boot /),
      'MaintenanceDone: rebooted, audit clean',
    ]);
    expect(running.output()).not.toContain('(not the upgraded runtime)');
    expect(running.output()).toContain(`rebooting ${first.name}: systemctl --no-wall reboot`);
    expect(hook.messages.find((m) => m.event === 'node-finished' && m.node === first.name)!.text).toMatch(new RegExp(`: ${first.name}: rebooted in \\d+s$`));
    expect(hook.messages.at(-1)).toMatchObject({ event: 'fleet-finished', results: { [first.name]: 'rebooted', [third.name]: 'rebooted' } });
    expect(running.output()).toMatch(new RegExp(`tainted ${first.name}, ${third.name} node-maint.io/waiting=node-maint.fleet-reboot:PreferNoSchedule until each one's run ends`));
    expect(taintedWhile).toEqual([['node-maint.fleet-reboot:PreferNoSchedule'], [], ['node-maint.fleet-reboot:PreferNoSchedule']]);
    for (const t of FLEET) expect(await taints(t)).toEqual([]);
    const outputs = stack.outputs();
    // One node at a time (maxUnavailable 1): never two rebooting at once.
    expect(outputs.waves).toEqual([[first.name], [second.name], [third.name]]);
    const { nodes } = outputs;
    expect([nodes[first.name].result, nodes[second.name].result, nodes[third.name].result]).toEqual(['rebooted', 'nothing-to-do', 'rebooted']);
    const after = await Promise.all(FLEET.map(bootOf));
    expect([after[0] !== boots[0], after[1] === boots[1], after[2] !== boots[2]]).toEqual([true, true, true]);
    for (const t of FLEET) expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();

    // The sentinels went with /run: a second up changes nothing.
    const again = await stack.run(['up', '--yes', '--skip-preview']);
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
    // The preview says which node a blocking pod holds now, and what up will do about it.
    const preview = (await stack.run(['preview'])).stdout;
    expect(preview).toMatch(new RegExp(`${third.name}: held now by blocking pod\\(s\\) ${ns.name}/blocker-[a-z0-9-]+ on ${third.name}: \`pulumi up\` waits up to 15s for them to end, then passes it by \\(undrainable: skip\\)`));
    expect(preview).not.toContain(`${first.name}: held now`);
    hook.messages.length = 0;
    const up = await stack.run(['up', '--yes', '--skip-preview']);
    // Counted: the nodes this up ran, not the second's nothing-to-do carried over from the last one.
    expect(hook.messages.at(-1)).toMatchObject({ event: 'fleet-finished', results: { [first.name]: 'rebooted', [third.name]: 'skipped-undrainable' } });
    expect(Object.keys(hook.messages.at(-1)!.results as object).sort()).toEqual([first.name, third.name].sort());
    // Passed by for its blocking pod, marked as the README says a skip is: label, annotation, Warning Event.
    const skippedMarks = await marksOf(third);
    expect(skippedMarks.state).toBe('skipped');
    expect(skippedMarks.annotations['node-maint.io/skipped']).toMatch(/held by blocking pod\(s\)/);
    const skipEvents = (await kubectlJson('get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${third.name},reason=MaintenanceSkipped`)).items;
    expect(skipEvents.map((e: any) => e.message)).toContainEqual(expect.stringMatching(/^passed by, left as it was \(undrainable\): .*held by blocking pod/));
    const nodes = stack.outputs().nodes;
    expect([nodes[first.name].result, nodes[third.name].result], up.stdout).toEqual(['rebooted', 'skipped-undrainable']);
    expect(up.stdout + up.stderr).toMatch(new RegExp(`\\[${third.name}\\] held by blocking pod\\(s\\) ${ns.name}/blocker-[a-z0-9-]+ on ${third.name}`));
    const after = await Promise.all([first, third].map(bootOf));
    expect([after[0] !== boots[0], after[1] === boots[1]]).toEqual([true, true]);
    expect((await third.sh('test -e /var/run/reboot-required && echo there')).trim()).toBe('there');
    expect((await kubectlJson('get', 'node', third.name)).spec.unschedulable).toBeUndefined();
    for (const t of FLEET) expect((await kubectlJson('get', 'node', t.name)).spec.taints ?? []).not.toContainEqual(expect.objectContaining({ key: 'node-maint.io/waiting' }));
  });

  it("pendingUpgrades of one origin (issue 43 item 4): preview plans each node's own; up installs them where apt has them, kept for a rollback, and leaves the others unchanged", async () => {
    const [first, ...others] = FLEET as [TestNode, ...TestNode[]];
    stack.unset('blockingPodSelector', 'blockingPodTimeoutSeconds', 'undrainable', 'reboot', 'rebootCommand');
    await stack.set('pendingUpgrades', JSON.stringify({ origin: OS_PATCH_ORIGIN }));
    await withOsPatchSource(first, async () => {
      const preview = (await stack.run(['preview'])).stdout;
      expect(preview).toContain(`${first.name}: pending upgrades: ${OS_PATCH} 1.0-1 -> 1.0-2`);
      for (const t of others) expect(preview).toContain(`${t.name}: no pending upgrade of ${OS_PATCH_ORIGIN}`);
      const up = await stack.run(['up', '--yes', '--skip-preview']);
      expect(up.stdout).toContain(`[${first.name}]         kept ${OS_PATCH} 1.0-1 for a rollback`);
      for (const t of others) expect(up.stdout).not.toContain(`[${t.name}] node-maint: maintaining`);
      const { nodes } = stack.outputs();
      expect(nodes[first.name]).toMatchObject({ result: 'upgraded', versionsBefore: { [OS_PATCH]: '1.0-1' }, versionsAfter: { [OS_PATCH]: '1.0-2' } });
      expect(await osPatch(first)).toBe('1.0-2');
    });
  });
});
