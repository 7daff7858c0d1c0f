import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, kubectl, kubectlJson, sh, waitFor } from './bed.js';
import { deployment } from './fixtures.js';
import { useNamespace, useNodes, type TestNode } from './pool.js';
import { waitForAlert } from './prometheus.js';
import { configureBedFleet, containerdOn, newStack, type PulumiStack } from './pulumi.js';
import { webhookReceiver } from './webhook.js';

// Gates between waves, through a real `pulumi up` of two fleet hosts, one per wave: a real Prometheus alert holds the
// second wave (it is raised by the first node's after-uncordon hook: a textfile metric node-exporter serves and the
// bed's rule NodeMaintTestHold fires on); the first node's workloads must be back, then the wave soaks. Messages go
// to a webhook served here; each node's run writes its metrics textfiles on the node.
const [FIRST, SECOND] = useNodes('any', 'any', 'resource:textfiles');
const ns = useNamespace();
const HOLD = () => `${bed().textfileDir}/node_maint_test_hold.prom`;
const setHold = (v: 0 | 1) => sh(`printf 'node_maint_test_hold ${v}\\n' > ${HOLD()}`);
const FLEET_TEXTFILES = '/var/lib/node-maint-test-textfile';

/** At the old containerd, schedulable, and no run holds its Lease (a rolled-back run leaves the Lease released). */
const untouched = async (node: TestNode) => {
  expect(await containerdOn(node)).toBe(bed().containerd.old);
  expect((await kubectlJson('get', 'node', node.name)).spec.unschedulable).toBeUndefined();
  const holder = await kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${node.name}`, '--ignore-not-found', '-o', 'jsonpath={.spec.holderIdentity}');
  expect(holder).toBe('');
};

/** When node-maint started maintaining the node (its MaintenanceStarted Event), in ms. */
async function startedAt(node: string): Promise<number> {
  const events = await kubectlJson('get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${node},reason=MaintenanceStarted`);
  return Math.max(...events.items.map((e: any) => Date.parse(e.firstTimestamp)));
}

describe('pulumi up with gates between waves, hooks and a webhook', () => {
  let stack: PulumiStack;
  let hook: Awaited<ReturnType<typeof webhookReceiver>>;

  beforeAll(async () => {
    for (const node of [FIRST, SECOND]) await kubectl('-n', 'default', 'delete', 'events', '--field-selector', `reason=MaintenanceStarted,involvedObject.name=${node.name}`);
    await setHold(0);
    await sh(`rm -f ${HOLD()}.log`);
    hook = await webhookReceiver();
    // Two replicas that fit only on the first node: drained, they wait Pending until it is back.
    await applyObjects([deployment(ns.name, 'gated', FIRST.name, 2)]);
    await kubectl('-n', ns.name, 'rollout', 'status', 'deployment/gated', '--timeout=180s');
    stack = await newStack('gates');
    await configureBedFleet(stack, [FIRST.name, SECOND.name], 1);
    await stack.set('webhook', hook.url, true);
    await stack.set('metrics', JSON.stringify({ textfileDir: FLEET_TEXTFILES }));
  });

  afterAll(async () => {
    hook.server.close();
    await sh(`rm -f ${HOLD()} ${HOLD()}.log`);
  });

  const gates = (holdTimeout: string) => JSON.stringify({ soak: '5s', workloadsTimeout: '3m', alerts: { prometheus: bed().prometheus, names: ['NodeMaintTestHold'], holdTimeout } });

  it('an alert firing past its hold timeout stops the fleet before its first node, which is left untouched', async () => {
    await setHold(1);
    await waitForAlert('NodeMaintTestHold', true);
    await stack.set('gates', gates('10s'));
    const up = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(up.code).not.toBe(0);
    expect(up.stdout + up.stderr).toMatch(new RegExp(`${FIRST.name}: not started: the fleet stops here: timed out after 10s waiting for no firing alert before ${FIRST.name} starts: held by firing alert\\(s\\): NodeMaintTestHold\\{[^}]*severity=critical[^}]*\\}`));
    await untouched(FIRST);
    await untouched(SECOND);
    // The fleet that started ends with a message saying what became of each node.
    expect(hook.messages.map((m) => `${m.event} ${m.node ?? ''}`)).toEqual(['fleet-started ', `node-held ${FIRST.name}`, 'fleet-failed ']);
    expect(hook.messages[2]).toMatchObject({ results: { [FIRST.name]: 'not-started', [SECOND.name]: 'not-started' } });
    expect(hook.messages[2]!.text).toContain(`; not started, the fleet stopped: ${SECOND.name}`);
  });

  it('a failing before-drain hook rolls its node back and stops the fleet; the webhook is told', async () => {
    hook.messages.length = 0;
    await setHold(0);
    await waitForAlert('NodeMaintTestHold', false);
    await stack.set('gates', gates('5m'));
    // Set as a secret (a hook may carry a token): the command is never shown, in the log or the state.
    await stack.set('hooks', JSON.stringify({ beforeDrain: 'echo "change freeze" >&2; exit 3' }), true);
    const up = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(up.stdout + up.stderr).toContain('hook --hook-before-drain: (a secret: not shown)');
    expect(up.stdout + up.stderr + stack.stateText()).not.toContain('echo "change freeze"');
    expect(up.code).not.toBe(0);
    expect(up.stdout + up.stderr).toMatch(new RegExp(`${FIRST.name}: rolled-back \\(exit 11\\): hook --hook-before-drain failed on ${FIRST.name} \\(exit 3\\):[\\s\\S]*change freeze`));
    await untouched(FIRST);
    await untouched(SECOND);
    expect(hook.messages.map((m) => `${m.event} ${m.node ?? ''}`)).toEqual(['fleet-started ', `node-failed ${FIRST.name}`, 'fleet-failed ']);
    // The node named once, then what happened and why.
    expect(hook.messages[1]!.text).toMatch(new RegExp(`^node-maint node-maint/gates: ${FIRST.name}: rolled-back \\(exit 11\\): hook --hook-before-drain failed on ${FIRST.name} .*the fleet stops after this wave$`, 's'));
    expect(hook.messages[2]).toMatchObject({ results: { [FIRST.name]: 'rolled-back', [SECOND.name]: 'not-started' } });
  });

  it('holds the second wave while the alert fires, and starts it once the first node\'s workloads are back and the wave soaked', async () => {
    hook.messages.length = 0;
    // The first node's after-uncordon hook raises the alert: the second wave must wait for it to clear.
    await stack.set('hooks', JSON.stringify({ afterUncordon: `local:printf 'node_maint_test_hold 1\\n' > ${HOLD()}; echo "$NODE_MAINT_NODE" >> ${HOLD()}.log` }));
    // The gated Deployment as the fleet goes: when it was short, and when it was back at 2 again.
    let short = 0;
    let back = 0;
    const up = stack.start(['up', '--yes', '--skip-preview']);
    let ended: number | undefined;
    void up.done.then((code) => (ended = code));
    const watching = (async () => {
      while (ended === undefined) {
        const d = await kubectlJson('get', 'deployment', '-n', ns.name, 'gated').catch(() => undefined);
        const available = d?.status?.availableReplicas ?? 0;
        if (available < 2 && !short) short = Date.now();
        if (available === 2 && short && !back) back = Date.now();
        await new Promise((r) => setTimeout(r, 500));
      }
    })();

    // The first node's run ends with its after-uncordon hook, which raises the alert.
    await waitFor(async () => (await sh(`cat ${HOLD()}.log 2>/dev/null || true`)).includes(FIRST.name), 900_000, `${FIRST.name}'s after-uncordon hook`);
    await waitForAlert('NodeMaintTestHold', true);
    // Held: the first node is done, the second has not started.
    await waitFor(async () => up.output().includes('held by firing alert(s): NodeMaintTestHold'), 60_000, 'the second wave held by the alert');
    await new Promise((r) => setTimeout(r, 10_000));
    expect(await containerdOn(FIRST)).toBe(bed().containerd.new);
    await untouched(SECOND);
    const cleared = Date.now();
    await setHold(0);

    const code = await up.done;
    await watching;
    expect(code, up.output()).toBe(0);
    expect(await containerdOn(SECOND)).toBe(bed().containerd.new);
    const second = await startedAt(SECOND.name);
    // Event times have whole seconds.
    expect(second).toBeGreaterThanOrEqual(Math.floor(cleared / 1000) * 1000);
    expect(short, 'the gated workload was drained').toBeGreaterThan(0);
    expect(back, 'and came back').toBeGreaterThan(short);
    expect(second).toBeGreaterThanOrEqual(Math.floor((back + 5_000) / 1000) * 1000 - 1000);
    expect(up.output()).toMatch(new RegExp(`\\[${FIRST.name}\\] back: Ready, schedulable, .*Deployment ${ns.name}/gated.* available again`));
    expect(up.output()).toContain(`[${FIRST.name}] soaking 5s before the next wave`);
    expect((await sh(`cat ${HOLD()}.log`)).trim()).toBe(`${FIRST.name}\n${SECOND.name}`);
    // The webhook heard the fleet start, each node end, and the fleet end, in that order.
    expect(hook.messages.map((m) => `${m.event} ${m.node ?? ''}`)).toEqual(['fleet-started ', `node-finished ${FIRST.name}`, `node-finished ${SECOND.name}`, 'fleet-finished ']);
    expect(hook.messages[1]!.text).toContain(`${FIRST.name}: upgraded (containerd ${bed().containerd.old} -> containerd ${bed().containerd.new})`);
    expect(hook.messages[3]!.text).toMatch(/finished: 2 upgraded$/);
    // Each node's run left its metrics for node-exporter on the host.
    for (const node of [FIRST, SECOND]) {
      const run = await node.sh(`cat ${FLEET_TEXTFILES}/node_maint_run.prom`);
      expect(run).toContain(`node_maint_last_run_success{node="${node.name}"} 1`);
      expect(await node.sh(`cat ${FLEET_TEXTFILES}/node_maint_audit.prom`)).toContain(`node_maint_audit_verdict{node="${node.name}",verdict="clean"} 1`);
    }
  });
});
