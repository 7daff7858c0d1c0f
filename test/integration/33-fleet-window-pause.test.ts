import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, kubectl, kubectlJson, waitFor } from './bed.js';
import { deployment, holdPodOnNode, pinnedDeployment, releaseHeldPod, waitForNoTerminatingPods, waitForRunning } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';
import { configureBedFleet, containerdOn, newStack, type PulumiStack } from './pulumi.js';
import { webhookReceiver } from './webhook.js';

// The maintenance window and the pause ConfigMap hold `pulumi up` before a node starts; then a node a budget makes
// undrainable is passed by, and one whose drain passes its deadline, in one up. The stack keeps its Leases and its
// pause ConfigMap in a namespace of its own (leaseNamespace), so pausing it pauses no other fleet.
const [NODE, UNDRAINABLE, LATE] = useNodes('any', 'any', 'any');
const ns = useNamespace();
const PAUSE = () => ['-n', ns.name, 'configmap', 'node-maint-pause'];

/** A daily UTC window opening at `start` (to the minute), as stack config. */
const dailyWindow = (start: Date, duration: string) => JSON.stringify({ schedule: `${start.getUTCMinutes()} ${start.getUTCHours()} * * *`, duration, timeZone: 'UTC' });
const minuteOf = (ms: number) => new Date(Math.floor(ms / 60_000) * 60_000);

/** The node as the bed left it: old containerd, schedulable, no runbook Lease. */
async function expectUntouched(): Promise<void> {
  expect(await containerdOn(NODE)).toBe(bed().containerd.old);
  expect((await kubectlJson('get', 'node', NODE.name)).spec.unschedulable).toBeUndefined();
  expect(await kubectl('-n', ns.name, 'get', 'lease', `node-maint-${NODE.name}`, '--ignore-not-found')).toBe('');
}

/** The bed's fleet config for these nodes, with the stack's own lease namespace. */
async function configure(stack: PulumiStack, nodes: string[]): Promise<void> {
  await configureBedFleet(stack, nodes, 1);
  await stack.set('leaseNamespace', ns.name);
}

describe('pulumi up held by the maintenance window and the pause ConfigMap', () => {
  let stack: PulumiStack;
  let hook: Awaited<ReturnType<typeof webhookReceiver>>;

  beforeAll(async () => {
    hook = await webhookReceiver();
    stack = await newStack('window-pause');
    await configure(stack, [NODE.name]);
    await stack.set('webhook', hook.url, true);
  });

  afterAll(async () => {
    hook.server.close();
    await kubectl('delete', ...PAUSE(), '--ignore-not-found');
  });

  it('order: fewest pods first by default (ties by name); an operator-given order goes first', async () => {
    // Two pods more on the first node: the second has fewer.
    await pinnedDeployment(ns.name, 'weight', NODE.name, 2);
    const fleet = [NODE.name, UNDRAINABLE.name];
    await stack.set('nodes', JSON.stringify(fleet));
    const waves = async () => /order [^;]*; waves: (.*)$/m.exec((await stack.run(['preview'])).stdout)?.[1]?.trim().split(', then ');
    // As the program counts them: every pod bound to the node, from one list (none going away meanwhile).
    await waitForNoTerminatingPods(fleet);
    const pods = (await kubectlJson('get', 'pods', '-A')).items;
    const count = (n: string) => pods.filter((p: any) => p.spec.nodeName === n).length;
    expect(count(NODE.name)).toBe(count(UNDRAINABLE.name) + 2);
    stack.unset('order');
    expect(await waves()).toEqual([UNDRAINABLE.name, NODE.name]);
    await stack.set('order', JSON.stringify([NODE.name]));
    expect(await waves()).toEqual([NODE.name, UNDRAINABLE.name]);
    await kubectl('-n', ns.name, 'delete', 'deployment', 'weight');
    await configure(stack, [NODE.name]);
  });

  it('outside the window: preview says when it opens, and up starts no node', async () => {
    // Opens 12 hours from now, for an hour: closed for the whole test.
    const opens = minuteOf(Date.now() + 12 * 3_600_000);
    await stack.set('maintenanceWindow', dailyWindow(opens, '1h'));
    const preview = await stack.run(['preview']);
    expect(preview.stdout + preview.stderr).toContain(`starts no node until it opens next at ${opens.toISOString()}`);

    // A closed window is a hold, not a failure (issue 36): exit 0, said as a hold, the webhook hears no fleet-failed.
    hook.messages.length = 0;
    const up = await stack.run(['up', '--yes', '--skip-preview']);
    expect(up.stdout + up.stderr).toContain(`[${NODE.name}] held, not started: outside the maintenance window`);
    expect(up.stdout + up.stderr).toContain(`it opens next at ${opens.toISOString()}`);
    expect(up.stdout + up.stderr).toMatch(new RegExp(`1 node\\(s\\) held, not started \\(the next \`pulumi up\` does them\\): ${NODE.name} \\(outside the maintenance window`));
    expect(hook.messages.map((m) => m.event)).toEqual(['fleet-started', 'node-held', 'fleet-finished']);
    expect(hook.messages.at(-1)!.text).toMatch(/finished: 1 held; held, the next `pulumi up` does them: /);
    await expectUntouched();
    // Still a change for the next up: held is not done.
    expect((await stack.run(['preview'])).stdout).toMatch(/1 to update/);
  });

  it('inside the window but paused: up starts no node and names the ConfigMap, its reason and the way on', async () => {
    // Opened an hour ago, for four hours.
    await stack.set('maintenanceWindow', dailyWindow(minuteOf(Date.now() - 3_600_000), '4h'));
    await kubectl('create', ...PAUSE(), '--from-literal=reason=integration test 33');
    const preview = await stack.run(['preview']);
    expect(preview.stdout + preview.stderr).toContain('inside the maintenance window');

    const up = await stack.run(['up', '--yes', '--skip-preview']);
    expect(up.stdout + up.stderr).toContain(`[${NODE.name}] held, not started: paused by ConfigMap ${ns.name}/node-maint-pause (reason: integration test 33)`);
    expect(up.stdout + up.stderr).toContain(`remove it (\`kubectl -n ${ns.name} delete configmap node-maint-pause\`) and run \`pulumi up\` again`);
    expect(up.stdout + up.stderr).not.toContain('held, not started: outside the maintenance window');
    await expectUntouched();
  });

  it('the ConfigMap deleted, up goes on: a node its budgets make undrainable and one whose drain passes its deadline (a pod held by a finalizer, rolled back) are marked and passed by (undrainable: skip); the last upgraded', async () => {
    // A ledger on the undrainable node whose budget allows no disruption.
    await applyObjects([
      deployment(ns.name, 'ledger', UNDRAINABLE.name, 1),
      { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'ledger', namespace: ns.name }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'ledger' } } } },
    ]);
    await waitForRunning(ns.name, 'app=ledger', 1);
    await waitFor(async () => (await kubectlJson('get', 'pdb', '-n', ns.name, 'ledger')).status?.currentHealthy === 1, 60_000, 'the ledger budget to see its pod');
    await configure(stack, [UNDRAINABLE.name, LATE.name, NODE.name]);
    await stack.set('undrainable', 'skip');
    await stack.set('drain', JSON.stringify({ ignoreDaemonSets: true, deleteEmptyDirData: true, force: true, gracePeriodSeconds: 5, timeoutSeconds: 20 }));
    await kubectl('delete', ...PAUSE());
    try {
      await holdPodOnNode(ns.name, 'held', LATE.name);
      const up = await stack.run(['up', '--yes', '--skip-preview']);
      const said = up.stdout + up.stderr;
      expect(said).toMatch(new RegExp(`2 node\\(s\\) skipped as undrainable, left as they were: .*${UNDRAINABLE.name} \\(PodDisruptionBudgets block the drain`));
      expect(said).toMatch(new RegExp(`2 node\\(s\\) skipped as undrainable, left as they were: .*${LATE.name} \\(the drain did not finish`));
      expect(await containerdOn(NODE)).toBe(bed().containerd.new);
      for (const passed of [UNDRAINABLE, LATE]) expect(await containerdOn(passed)).toBe(bed().containerd.old);
      const outputs = stack.outputs();
      expect(outputs.waves).toEqual([[UNDRAINABLE.name], [LATE.name], [NODE.name]]);
      expect(outputs.nodes[NODE.name]).toMatchObject({ result: 'upgraded', versionsAfter: { containerd: bed().containerd.new } });
      for (const passed of [UNDRAINABLE, LATE]) expect(outputs.nodes[passed.name]).toMatchObject({ result: 'skipped-undrainable' });
      expect(outputs.skipped[UNDRAINABLE.name]).toContain(`${ns.name}/ledger: its PodDisruptionBudget allows no disruption`);
      expect(outputs.skipped[LATE.name]).toMatch(new RegExp(`the drain did not finish: .*${ns.name}/held`));
      // Marked where operators look, schedulable as they were.
      for (const passed of [UNDRAINABLE, LATE]) {
        const node = await kubectlJson('get', 'node', passed.name);
        expect(node.metadata.labels['node-maint.io/state']).toBe('skipped');
        expect(node.spec.unschedulable).toBeUndefined();
      }
      expect((await kubectlJson('get', 'node', UNDRAINABLE.name)).metadata.annotations['node-maint.io/skipped']).toMatch(/allows no disruption/);
      const events = await kubectl('get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${UNDRAINABLE.name},reason=MaintenanceSkipped`, '-o', 'name');
      expect(events).not.toBe('');
    } finally {
      await releaseHeldPod(ns.name, 'held').catch(() => undefined);
      await kubectl('-n', ns.name, 'delete', 'pod', 'held', '--ignore-not-found', '--wait=false');
    }
  });

  it('a node a killed `pulumi up` left half-done is finished first by the next up, though last in the order and the fleet paused; the pause still holds the rest', async () => {
    await kubectl('-n', ns.name, 'delete', 'deployment,pdb', 'ledger', '--wait=false');
    await NODE.reset();
    await configure(stack, [NODE.name]);
    await stack.set('drain', JSON.stringify({ ignoreDaemonSets: true, deleteEmptyDirData: true, force: true, gracePeriodSeconds: 5 }));
    await kubectl('delete', ...PAUSE(), '--ignore-not-found');
    // The runner lost mid-run: killed once the node is cordoned, with everything Pulumi started.
    const first = stack.start(['up', '--yes', '--skip-preview']);
    await waitFor(async () => (await kubectlJson('get', 'node', NODE.name)).spec.unschedulable === true, 300_000, `${NODE.name} cordoned by the first up`);
    first.kill();
    await first.done;
    expect((await kubectlJson('get', 'node', NODE.name)).spec.unschedulable).toBe(true);

    // The dead runner's lock stays on the stack: up refuses until the operator removes it (README: pulumi cancel).
    const locked = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(locked.stdout + locked.stderr).toContain('the stack is currently locked');
    await stack.run(['cancel', '--yes']);
    // The operator pauses the fleet, then runs up again with the half-done node last in the order: it is finished
    // first all the same, in a wave of its own; nothing else starts.
    await kubectl('create', ...PAUSE(), '--from-literal=reason=integration test 33, resumed');
    await configure(stack, [UNDRAINABLE.name, NODE.name]);
    const again = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    const said = again.stdout + again.stderr;
    expect(said).toMatch(new RegExp(`waves: ${NODE.name}, then ${UNDRAINABLE.name}`));
    expect(said).toMatch(new RegExp(`\\[${NODE.name}\\] finishing the unfinished run \\S+, \\S+ first: the window, the pause and the alerts are not asked`));
    expect(await containerdOn(NODE), said).toBe(bed().containerd.new);
    expect((await kubectlJson('get', 'node', NODE.name)).spec.unschedulable).toBeUndefined();
    expect(said).toContain(`[${UNDRAINABLE.name}] held, not started: paused by ConfigMap ${ns.name}/node-maint-pause`);
    expect(again.code).toBe(0);
    expect(await containerdOn(UNDRAINABLE)).toBe(bed().containerd.old);
  });
});
