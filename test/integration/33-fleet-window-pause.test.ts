import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, holdPodOnNode, kubectl, kubectlJson, releaseHeldPod, waitFor, waitForNoTerminatingPods } from './bed.js';
import { configureBedFleet, fleetContainerd, newStack, resetFleetHost, resetFleetHosts, type PulumiStack } from './pulumi.js';

// The maintenance window and the pause ConfigMap hold `pulumi up` before a node starts; then a node a budget makes
// undrainable is passed by, and one whose drain passes its deadline. Two fleet hosts keep it cheap.
const NODE = 'fleet-1';
const UNDRAINABLE = 'fleet-2';
const PAUSE = ['-n', 'kube-system', 'configmap', 'node-maint-pause'];

/** A daily UTC window opening at `start` (to the minute), as stack config. */
const dailyWindow = (start: Date, duration: string) => JSON.stringify({ schedule: `${start.getUTCMinutes()} ${start.getUTCHours()} * * *`, duration, timeZone: 'UTC' });
const minuteOf = (ms: number) => new Date(Math.floor(ms / 60_000) * 60_000);

/** The node as the bed left it: old containerd, schedulable, no runbook Lease. */
async function expectUntouched(): Promise<void> {
  expect(await fleetContainerd(NODE)).toBe(bed().containerd.old);
  expect((await kubectlJson('get', 'node', NODE)).spec.unschedulable).toBeUndefined();
  expect(await kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${NODE}`, '--ignore-not-found')).toBe('');
}

describe('pulumi up held by the maintenance window and the pause ConfigMap', () => {
  let stack: PulumiStack;

  beforeAll(async () => {
    await kubectl('delete', ...PAUSE, '--ignore-not-found');
    await resetFleetHost(NODE);
    await resetFleetHost(UNDRAINABLE);
    stack = await newStack('window-pause');
    await configureBedFleet(stack, [NODE], 1);
  });

  afterAll(async () => {
    await kubectl('delete', ...PAUSE, '--ignore-not-found');
    await kubectl('label', 'node', UNDRAINABLE, 'node-maint.io/frozen-', 'node-maint.io/state-', 'node-maint.io/skipped-');
    await kubectl('-n', 'demo', 'delete', 'pod', '-l', 'app=ledger', '--wait=false');
    await resetFleetHosts();
  });

  it('order: fewest pods first by default (ties by name); an operator-given order goes first', async () => {
    const fleet = ['real-node', 'fleet-1', 'fleet-2', 'fleet-3'];
    await stack.set('nodes', JSON.stringify(fleet));
    await stack.set('maxUnavailable', '1');
    const waves = async () => /order [^;]*; waves: (.*)$/m.exec((await stack.run(['preview'])).stdout)?.[1]?.trim().split(', then ');
    // As the program counts them: every pod bound to the node, from one list (none going away meanwhile).
    await waitForNoTerminatingPods();
    const pods = (await kubectlJson('get', 'pods', '-A')).items;
    const count = (n: string) => pods.filter((p: any) => p.spec.nodeName === n).length;
    const expected = [...fleet].sort((a, b) => count(a) - count(b) || a.localeCompare(b));
    await stack.run(['config', 'rm', 'node-maint:order', '--config-file', stack.configFile]);
    expect(await waves()).toEqual(expected);
    await stack.set('order', JSON.stringify([expected.at(-1)]));
    expect(await waves()).toEqual([expected.at(-1), ...expected.slice(0, -1)]);
    await configureBedFleet(stack, [NODE], 1);
  });

  it('outside the window: preview says when it opens, and up starts no node', async () => {
    // Opens 12 hours from now, for an hour: closed for the whole test.
    const opens = minuteOf(Date.now() + 12 * 3_600_000);
    await stack.set('maintenanceWindow', dailyWindow(opens, '1h'));
    const preview = await stack.run(['preview']);
    expect(preview.stdout + preview.stderr).toContain(`starts no node until it opens next at ${opens.toISOString()}`);

    const up = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(up.code).not.toBe(0);
    expect(up.stdout + up.stderr).toContain(`${NODE}: not started: outside the maintenance window`);
    expect(up.stdout + up.stderr).toContain(`it opens next at ${opens.toISOString()}`);
    await expectUntouched();
  });

  it('inside the window but paused: up starts no node and names the ConfigMap, its reason and the way on', async () => {
    // Opened an hour ago, for four hours.
    await stack.set('maintenanceWindow', dailyWindow(minuteOf(Date.now() - 3_600_000), '4h'));
    await kubectl('create', ...PAUSE, '--from-literal=reason=integration test 33');
    const preview = await stack.run(['preview']);
    expect(preview.stdout + preview.stderr).toContain('inside the maintenance window');

    const up = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(up.code).not.toBe(0);
    expect(up.stdout + up.stderr).toContain(`${NODE}: not started: paused by ConfigMap kube-system/node-maint-pause (reason: integration test 33)`);
    expect(up.stdout + up.stderr).toContain('remove it (`kubectl -n kube-system delete configmap node-maint-pause`) and run `pulumi up` again');
    expect(up.stdout + up.stderr).not.toContain('outside the maintenance window');
    await expectUntouched();
  });

  it('the ConfigMap deleted, up goes on: an undrainable node first is marked and passed by (undrainable: skip), the next upgraded', async () => {
    // The seeded "ledger" Deployment's budget allows no disruption; it runs only where node-maint.io/frozen=true.
    await kubectl('label', 'node', UNDRAINABLE, 'node-maint.io/frozen=true', '--overwrite');
    await waitFor(async () => (await kubectlJson('get', 'pods', '-n', 'demo', '-l', 'app=ledger')).items.some((p: any) => p.spec.nodeName === UNDRAINABLE && p.status.phase === 'Running'), 120_000, `the ledger pod running on ${UNDRAINABLE}`);
    await waitFor(async () => (await kubectlJson('get', 'pdb', '-n', 'demo', 'ledger')).status?.currentHealthy === 1, 60_000, 'the ledger budget to see its pod');
    await configureBedFleet(stack, [UNDRAINABLE, NODE], 1);
    await stack.set('undrainable', 'skip');
    await kubectl('delete', ...PAUSE);

    const up = await stack.run(['up', '--yes', '--skip-preview']);
    expect(up.stdout + up.stderr).toMatch(new RegExp(`1 node\\(s\\) skipped as undrainable, left as they were: ${UNDRAINABLE} \\(PodDisruptionBudgets block the drain`));
    expect(await fleetContainerd(NODE)).toBe(bed().containerd.new);
    expect(await fleetContainerd(UNDRAINABLE)).toBe(bed().containerd.old);
    const outputs = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout);
    expect(outputs.waves).toEqual([[UNDRAINABLE], [NODE]]);
    expect(outputs.nodes[NODE]).toMatchObject({ result: 'upgraded', versionsAfter: { containerd: bed().containerd.new } });
    expect(outputs.nodes[UNDRAINABLE]).toMatchObject({ result: 'skipped-undrainable' });
    expect(outputs.skipped[UNDRAINABLE]).toMatch(/demo\/ledger: its PodDisruptionBudget allows no disruption/);
    // Marked where operators look, schedulable as it was.
    const node = await kubectlJson('get', 'node', UNDRAINABLE);
    expect(node.metadata.labels['node-maint.io/state']).toBe('skipped');
    expect(node.metadata.annotations['node-maint.io/skipped']).toMatch(/allows no disruption/);
    expect(node.spec.unschedulable).toBeUndefined();
    const events = await kubectl('get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${UNDRAINABLE},reason=MaintenanceSkipped`, '-o', 'name');
    expect(events).not.toBe('');
  });

  it('a drain past its deadline (a pod held by a finalizer): the node rolled back, marked and passed by; the next upgraded', async () => {
    await kubectl('label', 'node', UNDRAINABLE, 'node-maint.io/frozen-');
    await kubectl('-n', 'demo', 'delete', 'pod', '-l', 'app=ledger', '--wait=false');
    await resetFleetHost(NODE);
    try {
      await holdPodOnNode('held', UNDRAINABLE);
      await stack.set('drain', JSON.stringify({ ignoreDaemonSets: true, deleteEmptyDirData: true, force: true, gracePeriodSeconds: 5, timeoutSeconds: 20 }));
      const up = await stack.run(['up', '--yes', '--skip-preview']);
      expect(up.stdout + up.stderr).toMatch(new RegExp(`1 node\\(s\\) skipped as undrainable, left as they were: ${UNDRAINABLE} \\(the drain did not finish`));
      expect(await fleetContainerd(NODE)).toBe(bed().containerd.new);
      expect(await fleetContainerd(UNDRAINABLE)).toBe(bed().containerd.old);
      const outputs = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout);
      expect(outputs.nodes[NODE]).toMatchObject({ result: 'upgraded' });
      expect(outputs.skipped[UNDRAINABLE]).toMatch(/the drain did not finish: .*demo\/held/);
      const node = await kubectlJson('get', 'node', UNDRAINABLE);
      expect(node.metadata.labels['node-maint.io/state']).toBe('skipped');
      expect(node.spec.unschedulable).toBeUndefined();
    } finally {
      await releaseHeldPod('held').catch(() => undefined);
      await kubectl('-n', 'demo', 'delete', 'pod', 'held', '--ignore-not-found', '--wait=false');
    }
  });
});
