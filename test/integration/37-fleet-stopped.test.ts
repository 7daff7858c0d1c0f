import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectlJson, sh, waitFor } from './bed.js';
import { lease } from './faults.js';
import { bootOf, pinnedDeployment, slowSshdAtBoot, untilSshDown } from './fixtures.js';
import { useNamespace, useNodes, type TestNode } from './pool.js';
import { waitForAlert } from './prometheus.js';
import { commandLine, configureBedFleet, containerdOn, newStack, residentKiB, type PulumiStack, type Started } from './pulumi.js';
import { webhookReceiver } from './webhook.js';

// `pulumi up` stopped as operators stop it, the test killing or signalling only the `pulumi` process it started (never
// its plugins), so that what Pulumi leaves behind is seen: Ctrl-C while a node waits on an alert gate, Ctrl-C while one
// drains, two SIGTERMs, SIGKILL during apt. Each ends with the webhook told, no provider left running, and the next
// plain `pulumi up` finishing every node.
const [FIRST, SECOND] = useNodes('any', 'any', 'resource:textfiles');
const ns = useNamespace();
const HOLD = () => `${bed().textfileDir}/node_maint_test_hold.prom`;
const setHold = (v: 0 | 1) => sh(`printf 'node_maint_test_hold ${v}\\n' > ${HOLD()}`);
const CANCELLED = /a Ctrl-C or SIGTERM on `pulumi up`|the end of its `pulumi` process/;

/** The `pulumi up` under way: its providers, as they run now. */
const providersOf = (up: Started) => up.descendants().filter((p) => p.args.includes('dynamic-provider'));

/** Waits for the provider line saying this node's step started ("[node] [ 3/12] Drain ..."). */
const atStep = async (up: Started, node: TestNode, title: string) => {
  let ended = false;
  void up.done.then(() => (ended = true));
  await waitFor(async () => ended || new RegExp(`\\[${node.name}\\] \\[ ?\\d+/\\d+\\] ${title} \\.\\.\\.`).test(up.output()), 600_000, `${node.name}: ${title}`);
  if (ended) throw new Error(`pulumi up ended before ${node.name} reached "${title}":\n${up.output().slice(-4000)}`);
};

/** Every process that was under `pulumi` has ended within `ms` (the test ends any left, and says so by failing). */
async function expectGone(pids: Array<{ pid: number; args: string }>, ms: number, what: string): Promise<void> {
  try {
    await waitFor(async () => pids.every((p) => commandLine(p.pid) !== p.args), ms, what);
  } finally {
    for (const p of pids.filter((x) => commandLine(x.pid) === x.args)) process.kill(p.pid, 'SIGKILL');
  }
}

/** A run the stop interrupted: its Lease free for anyone, its journal unfinished and saying who stopped it where. */
async function expectStoppedRun(node: TestNode): Promise<void> {
  await waitFor(async () => (await lease(node.name)).holder === undefined, 60_000, `${node.name}'s Lease released`);
  const { journal } = await lease(node.name);
  expect(journal.status).toBe('running');
  expect(journal.stopped.by).toMatch(CANCELLED);
}

describe('pulumi up stopped by Ctrl-C, SIGTERM or SIGKILL', () => {
  let stack: PulumiStack;
  let hook: Awaited<ReturnType<typeof webhookReceiver>>;
  const events = () => hook.messages.map((m) => `${m.event}${m.node ? ` ${m.node}` : ''}`);

  /** The next plain `pulumi up` finishes both nodes at `version`, and the webhook's story ends fleet-finished; its output. */
  const nextUpFinishes = async (version: string) => {
    hook.messages.length = 0;
    const again = await stack.run(['up', '--yes', '--skip-preview']);
    for (const node of [FIRST, SECOND]) expect(await containerdOn(node)).toBe(version);
    expect(events().at(-1)).toBe('fleet-finished');
    return again.stdout + again.stderr;
  };

  beforeAll(async () => {
    await setHold(0);
    hook = await webhookReceiver();
    stack = await newStack('stopped');
    await configureBedFleet(stack, [FIRST.name, SECOND.name], 1);
    await stack.set('webhook', hook.url, true);
  });

  afterAll(async () => {
    hook.server.close();
    await sh(`rm -f ${HOLD()}`);
  });

  it('Ctrl-C while the first node waits on an alert gate: it gives up at once, not started: cancelled; nothing changed', async () => {
    await setHold(1);
    await waitForAlert('NodeMaintTestHold', true);
    await stack.set('gates', JSON.stringify({ alerts: { prometheus: bed().prometheus, names: ['NodeMaintTestHold'], holdTimeout: '10m' } }));
    try {
      const up = stack.start(['up', '--yes', '--skip-preview']);
      await waitFor(async () => up.output().includes('held by firing alert(s): NodeMaintTestHold'), 300_000, 'the first node held by the alert');
      const providers = providersOf(up);
      const t0 = Date.now();
      up.signal('SIGINT');
      expect(await up.done).not.toBe(0);
      expect(Date.now() - t0).toBeLessThan(30_000);
      expect(up.output()).toMatch(new RegExp(`${FIRST.name}: not started: cancelled by a Ctrl-C or SIGTERM on \`pulumi up\``));
      await expectGone(providers, 60_000, 'the providers of the cancelled up to end');
      expect(await containerdOn(FIRST)).toBe(bed().containerd.old);
      expect((await kubectlJson('get', 'node', FIRST.name)).spec.unschedulable).toBeUndefined();
      expect(events()).toEqual(['fleet-started', `node-held ${FIRST.name}`, 'fleet-failed']);
      expect(hook.messages.at(-1)!.text).toContain(`not started, the fleet stopped: ${SECOND.name}`);
    } finally {
      await setHold(0);
      stack.unset('gates');
    }
  });

  it('Ctrl-C while the first node drains: it stops at its next safe point, the webhook hears fleet-failed; the next up finishes both', async () => {
    hook.messages.length = 0;
    await pinnedDeployment(ns.name, 'drained', FIRST.name, 2);
    const up = stack.start(['up', '--yes', '--skip-preview']);
    await atStep(up, FIRST, 'Drain');
    await new Promise((r) => setTimeout(r, 500));
    const providers = providersOf(up);
    const t0 = Date.now();
    up.signal('SIGINT');
    expect(await up.done).not.toBe(0);
    expect(Date.now() - t0).toBeLessThan(60_000);
    expect(up.output()).toMatch(new RegExp(`${FIRST.name}: stopped \\(exit 18\\): stopped by a Ctrl-C or SIGTERM on \`pulumi up\``));
    await expectGone(providers, 60_000, 'the providers of the cancelled up to end');
    await expectStoppedRun(FIRST);
    expect((await kubectlJson('get', 'node', FIRST.name)).spec.unschedulable).toBe(true);
    expect(events().at(-1)).toBe('fleet-failed');
    expect(hook.messages.at(-1)).toMatchObject({ results: { [FIRST.name]: 'stopped', [SECOND.name]: 'not-started' } });

    expect(await nextUpFinishes(bed().containerd.new)).toContain(`${FIRST.name}: a stopped or killed \`pulumi up\` left run`);
  });

  it('two SIGTERMs in the teardown (of a reboot the first node asks for): pulumi ends at once; its provider stops the node and exits within a minute; the next up finishes', async () => {
    hook.messages.length = 0;
    // A reboot has the teardown an upgrade has, without an install (and the downgrade it would cost after).
    await stack.set('reboot', 'if-required');
    await FIRST.sh('touch /var/run/reboot-required');
    const up = stack.start(['up', '--yes', '--skip-preview']);
    await atStep(up, FIRST, 'Tear down sandbox networks');
    const tree = up.descendants();
    up.signal('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    up.signal('SIGTERM');
    await up.done;
    await expectGone(tree.filter((p) => p.args.includes('dynamic-provider')), 60_000, 'the orphaned provider to end');
    await expectStoppedRun(FIRST);
    await waitFor(async () => events().at(-1) === 'fleet-failed', 30_000, 'fleet-failed at the webhook');
    await expectGone(tree, 5_000, 'what else pulumi left').catch(() => undefined);

    await stack.run(['cancel', '--yes'], { allowFailure: true });
    try {
      await nextUpFinishes(bed().containerd.new);
    } finally {
      stack.unset('reboot');
    }
  });

  it('SIGKILL of pulumi during apt: the provider neither spins nor grows, stops the node and exits within a minute; after pulumi cancel the next up finishes every node', async () => {
    hook.messages.length = 0;
    // Back to the old containerd: the file leaves its nodes as the next file's reset wants them.
    await stack.set('targets', JSON.stringify({ containerd: bed().containerd.old }));
    const up = stack.start(['up', '--yes', '--skip-preview']);
    await atStep(up, FIRST, 'Upgrade the runtime');
    await new Promise((r) => setTimeout(r, 1_000));
    const tree = up.descendants();
    // The providers that live (a process that has exited but not been reaped has no memory to read).
    const providers = tree.filter((p) => p.args.includes('dynamic-provider') && residentKiB(p.pid) !== undefined);
    expect(providers.length, JSON.stringify(tree)).toBeGreaterThan(0);
    const atKill = new Map(providers.map((p) => [p.pid, residentKiB(p.pid)!]));
    const most = new Map(atKill);
    up.signal('SIGKILL');
    await up.done;
    const killedAt = Date.now();
    await waitFor(async () => {
      for (const p of providers) most.set(p.pid, Math.max(most.get(p.pid)!, commandLine(p.pid) === p.args ? (residentKiB(p.pid) ?? 0) : 0));
      return providers.every((p) => commandLine(p.pid) !== p.args);
    }, 60_000, 'the orphaned providers to end');
    expect(Date.now() - killedAt).toBeLessThan(60_000);
    // The orphan of the field report grew from 449 MB to 1.08 GB in two minutes, writing to a stderr nobody read.
    for (const p of providers) expect(most.get(p.pid)!, `provider ${p.pid}`).toBeLessThan(atKill.get(p.pid)! * 1.25 + 32_768);
    await expectStoppedRun(FIRST);
    expect((await kubectlJson('get', 'node', FIRST.name)).spec.unschedulable).toBe(true);
    await waitFor(async () => events().at(-1) === 'fleet-failed', 30_000, 'fleet-failed at the webhook');
    await expectGone(tree, 5_000, 'what else pulumi left').catch(() => undefined);

    // README: after a killed `pulumi up`, `pulumi cancel` removes its lock; the next up needs nothing else.
    const locked = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(locked.stdout + locked.stderr).toContain('the stack is currently locked');
    await stack.run(['cancel', '--yes']);
    expect(await nextUpFinishes(bed().containerd.old)).toMatch(new RegExp(`waves: ${FIRST.name}, then ${SECOND.name}`));
    expect((await kubectlJson('get', 'node', FIRST.name)).spec.unschedulable).toBeUndefined();
  });

  it('Ctrl-C while the first node reboots (reboot: if-required, its sentinel there): it stops there; the next up at once, the node still silent, says it reboots, waits for it and finishes both', async () => {
    hook.messages.length = 0;
    // Silent for 60 s after its boot: longer than the next `pulumi up` takes to look at it, even on a loaded machine (15 s
    // once was not); never held past that, so that nothing the test waits on can hang on it.
    const dropIn = await slowSshdAtBoot(FIRST, 60);
    const boot = await bootOf(FIRST);
    // Only the first node reboots: the second's reboot would prove nothing more here.
    await stack.set('reboot', 'if-required');
    await FIRST.sh('touch /var/run/reboot-required');
    try {
      const up = stack.start(['up', '--yes', '--skip-preview']);
      await waitFor(async () => new RegExp(`\\[${FIRST.name}\\] +waiting up to \\d+s for ${FIRST.name} to come back on a new boot`).test(up.output()), 600_000, `${FIRST.name} rebooting`);
      const providers = providersOf(up);
      up.signal('SIGINT');
      expect(await up.done).not.toBe(0);
      expect(up.output()).toMatch(new RegExp(`${FIRST.name}: stopped \\(exit 18\\): stopped by a Ctrl-C or SIGTERM on \`pulumi up\``));
      await expectGone(providers, 60_000, 'the providers of the cancelled up to end');
      await expectStoppedRun(FIRST);
      // The next up while the node is on its new boot and its sshd not up yet: what the fleet reaches it by is silent.
      await untilSshDown(FIRST, boot);
      const out = await nextUpFinishes(bed().containerd.old);
      expect(out).toMatch(new RegExp(`${FIRST.name}: rebooting \\(run [0-9a-f-]+, running: its reboot is under way; the run reads the node once it is back\\)`));
      expect(hook.messages.find((m) => m.event === 'node-finished' && m.node === FIRST.name)).toMatchObject({ result: 'rebooted' });
    } finally {
      stack.unset('reboot');
      await FIRST.sh(`rm -f ${dropIn} && systemctl daemon-reload`);
    }
  });
});
