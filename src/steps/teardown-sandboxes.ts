import { getNode, podCidr } from '../cluster/nodes.js';
import { parseReplayOutput, planReplay, replayScript, type DelReplay } from '../node/cni/replay.js';
import { failedRemovals, removeSandboxesScript } from '../node/runtime/sandboxes.js';
import type { NodeState, Sandbox } from '../node/state/types.js';
import { leftAloneLine } from '../node/cni/owners.js';
import { configsByNetwork } from '../node/cni/network-mode.js';
import { backupLines, backupPath, writtenBackup } from '../node/backup.js';
import { quote, run } from '../node/transport/index.js';
import { runtimeUnitsOf } from '../runbook/journal.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';
import { parseUnitRuns, unitRunsScript, type UnitRun } from '../node/units.js';
import { WaitTimedOut, waitUntil } from '../wait.js';

export interface TeardownPlan extends StepPlan {
  replays: DelReplay[];
  unreplayable: Array<{ entryPath: string; reason: string }>;
  sandboxes: Sandbox[];
}

/** The runtime did not list its sandboxes: never taken as "no sandboxes" (the step fails, and the run rolls back). */
const notAnswering = (what: string) => new Error(`the container runtime did not answer (its sandbox list failed or timed out): could not ${what}`);

/** How long a runtime the node is still starting (a boot's queued start) is waited for before the step fails. */
const RUNTIME_START_TIMEOUT_MS = 120_000;

/**
 * The node's state with its runtime answering: a runtime whose units are still starting (the node back from a power
 * cut answers SSH before its boot has started them) is waited for, and once they run, until it answers (its CRI
 * serves a moment after systemd calls it started); one stopped or failed is not, and the step fails.
 */
async function reachableRuntime(ctx: RunContext): Promise<NodeState> {
  let state = await ctx.nodeState({ fresh: true });
  if (state.runtimeReachable) return state;
  const cannot = notAnswering('tear down its sandboxes').message;
  const units = ctx.journal.prior ? runtimeUnitsOf(ctx.journal.prior) : [];
  const runs = async () => [...parseUnitRuns(await run(ctx.reader, unitRunsScript(units)))];
  const inRun = (now: Array<[string, UnitRun]>, which: UnitRun) => now.filter(([, r]) => r === which).map(([u]) => u);
  const first = units.length > 0 ? inRun(await runs(), 'starting') : [];
  if (first.length === 0) throw new Error(cannot);
  ctx.progress(`the container runtime is starting (${first.join(', ')}: a start queued by the boot): waiting up to ${RUNTIME_START_TIMEOUT_MS / 1000}s for it`);
  await waitUntil('the container runtime to start and answer', async () => {
    const now = await runs();
    const still = inRun(now, 'starting');
    if (still.length > 0) return `still starting: ${still.join(', ')}`;
    const down = inRun(now, 'stopped');
    if (down.length > 0) throw new Error(`${cannot}: ${down.join(', ')} did not start`);
    state = await ctx.nodeState({ fresh: true });
    return state.runtimeReachable ? true : 'started, not answering yet';
  }, { timeoutMs: RUNTIME_START_TIMEOUT_MS, intervalMs: 2_000, signal: ctx.stop }).catch((e: Error) => {
    // An operator's stop stays a stop (a safe point), not a failure.
    throw e instanceof WaitTimedOut ? new Error(`${cannot}; ${e.message}`) : e;
  });
  return state;
}

export function planTeardown(state: NodeState, cidr: string | undefined): Omit<TeardownPlan, 'actions' | 'summary'> {
  const pidBySandbox = new Map(state.sandboxes.map((s) => [s.id, s.pid]));
  const fallback = { podCidr: cidr, configsByNetwork: configsByNetwork(state) };
  const replays: DelReplay[] = [];
  const unreplayable: TeardownPlan['unreplayable'] = [];
  for (const entry of state.cniCache) {
    const pid = pidBySandbox.get(entry.containerId) ?? 0;
    const netns = pid > 0 ? `/proc/${pid}/ns/net` : (entry.netns ?? '');
    const planned = planReplay(entry, netns, fallback);
    if ('calls' in planned) replays.push(planned);
    else unreplayable.push(planned);
  }
  return { replays, unreplayable, sandboxes: state.sandboxes };
}

/**
 * The network of every sandbox torn down while the runtime still knows it: DEL replayed from libcni's cache (the
 * config the ADD used), then the sandboxes removed, and a sandbox's checkpoint removed only once its DEL succeeded.
 */
export const teardownSandboxes: Step<TeardownPlan> = {
  name: 'teardown-sandboxes',
  title: 'Tear down sandbox networks',
  undoneByBoot: true,
  undo: 'nothing to undo: a torn-down network cannot be put back; kubelet sets up every pod anew when it starts',
  async plan(ctx) {
    const state = await reachableRuntime(ctx);
    const node = await getNode(ctx.cluster, ctx.options.node);
    const plan = planTeardown(state, podCidr(node));
    const leftAlone = leftAloneLine(state);
    const actions = [
      ...plan.replays.map((r) => `CNI DEL ${r.networkName}/${r.ifName} of ${r.containerId.slice(0, 12)}${r.ips.length ? ` (${r.ips.join(', ')})` : ''}${r.source === 'rebuilt' ? ' [config rebuilt]' : ''}`),
      ...plan.sandboxes.map((s) => `remove sandbox ${s.id.slice(0, 12)} (${s.namespace}/${s.name})`),
    ];
    return {
      ...plan,
      actions,
      summary: `${plan.replays.length} attachment(s) to tear down, ${plan.sandboxes.length} sandbox(es) to remove${plan.unreplayable.length ? `, ${plan.unreplayable.length} cache entr(ies) that cannot be replayed` : ''}${leftAlone ? `; ${leftAlone}` : ''}`,
      detail: {
        sandboxes: plan.sandboxes.map((s) => ({ id: s.id, pod: `${s.namespace}/${s.name}`, ready: s.ready })),
        deletes: plan.replays.map((r) => ({ entry: r.entryPath, containerId: r.containerId, ips: r.ips, source: r.source })),
        unreplayable: plan.unreplayable,
        leftAlone: state.foreign.cniCache.map((e) => e.path),
      },
    };
  },
  async apply(ctx, plan) {
    const net = await ctx.network();
    const flavor = ctx.journal.prior?.flavor ?? 'unknown';
    // What the DELs and removals consume (cache entries, reservations, checkpoints) is saved first, as reclaim does.
    const before = await ctx.nodeState();
    const backup = backupPath(ctx.runId, 'teardown');
    const saved = [...plan.replays.map((r) => r.entryPath), ...before.ipam.map((d) => d.path), ...before.checkpoints.map((c) => c.path)];
    const written = writtenBackup(await run(ctx.transport, ['set -e', ...backupLines(backup, saved)].join('\n'), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 }));
    if (written) {
      ctx.journal.backups.push(written);
      await ctx.saveJournal();
    }
    const results = parseReplayOutput(await run(ctx.transport, replayScript(plan.replays, net.binDir), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 }));
    const failedIds = new Set(plan.replays.filter((r) => !results.ok.has(r.entryPath)).map((r) => r.containerId));
    ctx.progress(`CNI DEL: ${results.ok.size} ok, ${results.failed.size} failed`);
    const state = await ctx.nodeState({ fresh: true });
    if (!state.runtimeReachable) throw notAnswering('remove its sandboxes');
    const removal = await run(ctx.transport, removeSandboxesScript(flavor, state.sandboxes, state.containers), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 });
    const notRemoved = failedRemovals(removal);
    // A checkpoint is the runtime's memory of a sandbox: dropped only when the sandbox's network is known to be gone.
    const checkpoints = state.checkpoints.filter((c) => !failedIds.has(c.sandboxId) && !notRemoved.includes(c.sandboxId)).map((c) => c.path);
    if (checkpoints.length > 0) await run(ctx.transport, `rm -f ${checkpoints.map((p) => quote(p)).join(' ')}`);
    const problems = [
      ...[...results.failed].map(([path, msg]) => `DEL failed for ${path}: ${msg}`),
      ...notRemoved.map((id) => `sandbox ${id.slice(0, 12)} could not be removed`),
      ...plan.unreplayable.map((u) => `${u.entryPath}: ${u.reason}`),
    ];
    if (problems.length > 0) throw new Error(problems.join('; '));
    const leftAlone = leftAloneLine(state);
    return `${results.ok.size} attachment(s) torn down, ${state.sandboxes.length} sandbox(es) removed, ${checkpoints.length} checkpoint(s) removed${leftAlone ? `; ${leftAlone}` : ''}`;
  },
  async verify(ctx, plan) {
    const state = await ctx.nodeState({ fresh: true });
    if (!state.runtimeReachable) throw notAnswering('check that no sandbox is left');
    const left = state.cniCache.filter((e) => plan.replays.some((r) => r.entryPath === e.path));
    if (state.sandboxes.length > 0 || left.length > 0) {
      throw new Error(`${state.sandboxes.length} sandbox(es) and ${left.length} cache entr(ies) remain after the teardown`);
    }
  },
};

