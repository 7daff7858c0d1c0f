import { classifyPods, refusalMessage } from '../cluster/drain/filters.js';
import { blockMessage, budgetBlocks } from '../cluster/drain/budgets.js';
import { getNode, isReady, readyMessage } from '../cluster/nodes.js';
import { listPodsOnNode } from '../cluster/pods.js';
import type { List, PodDisruptionBudget } from '../cluster/types.js';
import { availableVersionsScript, parseAvailableVersions } from '../node/packages/index.js';
import { detectFlavor, runtimeUnits } from '../node/runtime/flavor.js';
import { run } from '../node/transport/index.js';
import { RunbookError } from '../runbook/errors.js';
import type { PriorState } from '../runbook/journal.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';
import { daemonSetKeys } from './drain.js';

export interface PreflightPlan extends StepPlan {
  prior: PriorState;
  /** False when the runtime is already at the target versions and running: every later step has nothing to do. */
  maintenanceNeeded: boolean;
}

/** Everything that could stop the run is checked here, before anything changes. */
export const preflight: Step<PreflightPlan> = {
  name: 'preflight',
  title: 'Preflight checks',
  async plan(ctx) {
    const { options } = ctx;
    const node = await getNode(ctx.cluster, options.node);
    const state = await ctx.nodeState();
    const flavor = detectFlavor(state);
    const net = await ctx.network();
    if (flavor === 'unknown') throw new RunbookError('preflight', `no container runtime found on ${options.node} (no cri-docker, docker or containerd unit)`);
    if (!state.packageManager) throw new RunbookError('preflight', `${options.node} has no apt, dnf or yum`);
    // A resumed run finds kubelet stopped and the node NotReady: that is our doing, not a reason to stop.
    if (!ctx.resuming && !isReady(node)) throw new RunbookError('nodeNotReady', `node ${options.node} is not Ready: ${readyMessage(node)}`);
    const missing = Object.keys(options.targets).filter((p) => !state.packages[p]);
    if (missing.length > 0) throw new RunbookError('preflight', `${missing.join(', ')} not installed on ${options.node} (installed: ${Object.entries(state.packages).map(([p, v]) => `${p} ${v}`).join(', ') || 'none of the runtime packages'})`);
    const varFree = state.diskFreeBytes['/var/lib'] ?? state.diskFreeBytes['/var'] ?? state.diskFreeBytes['/'] ?? 0;
    if (varFree < options.minFreeBytes) throw new RunbookError('preflight', `${options.node} has ${Math.round(varFree / 2 ** 20)} MiB free under /var, less than ${Math.round(options.minFreeBytes / 2 ** 20)} MiB`);
    const changes = Object.entries(options.targets).filter(([p, v]) => state.packages[p] !== v);
    if (changes.length > 0) {
      const available = parseAvailableVersions(await run(ctx.transport, availableVersionsScript(state.packageManager, changes.map(([p]) => p))));
      const unavailable = changes.filter(([p, v]) => !available.get(p)?.has(v));
      if (unavailable.length > 0) {
        throw new RunbookError('preflight', unavailable.map(([p, v]) => `${p} ${v} is not available from ${options.node}'s package sources (available: ${[...(available.get(p) ?? [])].join(', ') || 'none'})`).join('; '));
      }
    }
    const prior: PriorState = ctx.journal.prior ?? {
      unschedulable: node.spec.unschedulable === true,
      kubeletActive: state.services.kubelet?.active === true,
      packages: Object.fromEntries(Object.keys(options.targets).map((p) => [p, state.packages[p]!])),
      runtimeServices: runtimeUnits(flavor).filter((u) => state.services[u]?.active),
      flavor,
      networkMode: net.mode,
    };
    const runtimeDown = prior.runtimeServices.some((u) => !state.services[u]?.active);
    const maintenanceNeeded = ctx.resuming || changes.length > 0 || runtimeDown;
    if (maintenanceNeeded && !ctx.resuming) await checkDrainable(ctx);
    const summary = [
      `${flavor}+${net.mode}`,
      ...Object.entries(options.targets).map(([p, v]) => `${p} ${state.packages[p]} -> ${v}`),
      maintenanceNeeded ? (ctx.resuming ? 'resuming an unfinished run' : 'budgets allow the drain') : 'already at target',
    ].join(', ');
    return { actions: [], summary, prior, maintenanceNeeded, detail: { flavor, network: net, prior } };
  },
  async apply() {},
  async verify() {},
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * PodDisruptionBudgets are checked before cordoning: a drain that cannot finish never starts. A budget that forbids
 * every disruption stops the run at once; one that is only at zero for now (replacements of pods evicted elsewhere
 * not Ready yet, as in a fleet's next wave) is waited for, a bounded time, before it counts as a block.
 */
async function checkDrainable(ctx: RunContext): Promise<void> {
  const { options } = ctx;
  const deadline = Date.now() + options.budgetWaitSeconds * 1000;
  for (;;) {
    const pods = await listPodsOnNode(ctx.cluster, options.node);
    const verdicts = classifyPods(pods, options.drain, await daemonSetKeys(ctx.cluster));
    const refused = refusalMessage(verdicts);
    if (refused) throw new RunbookError('preflight', `drain would fail: ${refused}`);
    const budgets = await ctx.cluster.get<List<PodDisruptionBudget>>('/apis/policy/v1/poddisruptionbudgets');
    const blocks = budgetBlocks(verdicts.filter((v) => v.verdict.action === 'evict').map((v) => v.pod), budgets.items);
    if (blocks.length === 0) return;
    if (blocks.some((b) => b.permanent) || Date.now() > deadline) {
      throw new RunbookError('blockedByBudget', `PodDisruptionBudgets block the drain of ${options.node}: ${blockMessage(blocks)}`, { details: blocks });
    }
    ctx.progress(`waiting for budgets: ${blockMessage(blocks)}`);
    await sleep(2_000);
  }
}
