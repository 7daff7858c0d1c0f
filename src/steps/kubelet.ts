import { getNode, isReady, podCidr, readyMessage, readyPostedAt } from '../cluster/nodes.js';
import { RunbookError } from '../errors.js';
import { ownPidsScript } from '../node/processes.js';
import { parseUnitRuns, startUnitsScript, stopUnitsScript, unitRunsScript, type UnitRun } from '../node/units.js';
import { run } from '../node/transport/index.js';
import { kubeletUnitOf } from '../runbook/journal.js';
import { earlierStepActs, type RunContext, type Step } from '../runbook/step.js';
import { teardownSandboxes } from './teardown-sandboxes.js';
import { waitUntil } from '../wait.js';

/**
 * Whether kubelet runs or will: a start the boot queued behind the runtime, or Restart='s next try, is "inactive" to
 * is-active and starts kubelet later, under whatever the run does meanwhile.
 */
export async function kubeletRun(ctx: RunContext): Promise<UnitRun> {
  const unit = kubeletUnitOf(ctx.journal);
  return parseUnitRuns(await run(ctx.reader, unitRunsScript([unit]))).get(unit) ?? 'unknown';
}

export const kubeletActive = async (ctx: RunContext) => (await kubeletRun(ctx)) === 'running';

const RUN_WORDS: Record<UnitRun, string> = {
  running: 'kubelet runs',
  starting: 'kubelet is starting (a start queued by the boot, or a restart due)',
  stopping: 'kubelet is stopping',
  stopped: 'kubelet is not running',
  unknown: "kubelet's state could not be read (systemctl did not answer)",
};

/**
 * Starts kubelet; returns when the kubelet that now runs started, by the node's clock (ms, whole seconds), which kubelet
 * stamps its heartbeats with: just before the start, or earlier when the unit was already running (systemd's Restart=
 * brought it back), since such a kubelet posts nothing new until its Ready changes or its 5-minute status report.
 */
async function startKubeletUnit(ctx: RunContext): Promise<number> {
  const out = await run(ctx.transport, `date +%s && ${startUnitsScript([kubeletUnitOf(ctx.journal)])} && { ${KUBELET_STARTED_SCRIPT}; }`, { timeoutMs: 120_000 });
  const [before, processStart] = out.trim().split('\n').map((l) => Number.parseInt(l, 10));
  return Math.min(before, Number.isFinite(processStart) ? processStart : before) * 1000;
}

/** The first kubelet process of the node's own PID namespace, in $p. */
const KUBELET_PID = `p=$(${ownPidsScript('kubelet')} | head -n 1)`;

/** When process `pid` started, by the node's clock, in whole seconds rounded down (etimes is rounded down, so one second is taken off). */
const startedScript = (pid: string) => `echo $(( $(date +%s) - $(ps -o etimes= -p ${pid}) - 1 ))`;

/** When the running kubelet process started; nothing without one (or without ps). */
const KUBELET_STARTED_SCRIPT = `${KUBELET_PID}; [ -n "$p" ] && command -v ps >/dev/null && ${startedScript('"$p"')} || true`;

/**
 * As KUBELET_STARTED_SCRIPT, or, with no kubelet process (one that fails at every start, seen between two tries), when
 * the boot began (PID 1's start): nothing this boot's kubelet posted is older. Without ps, the node's time now.
 */
export const KUBELET_OR_BOOT_STARTED_SCRIPT = `${KUBELET_PID}; if command -v ps >/dev/null; then ${startedScript('"${p:-1}"')}; else date +%s; fi`;

/**
 * After this run's reboot, the kubelet systemd started at boot (ms, node clock): the Ready the API holds may still be
 * the one posted before the reboot, and the new kubelet's first status can say NotReady.
 */
async function kubeletStartedAfterReboot(ctx: RunContext): Promise<number | undefined> {
  if (!ctx.journal.reboot?.after) return undefined;
  // Never undefined after a reboot: a kubelet that refuses at every boot would leave the Ready from before it standing.
  const out = (await run(ctx.reader, KUBELET_OR_BOOT_STARTED_SCRIPT)).trim();
  const started = Number.parseInt(out, 10);
  if (!Number.isFinite(started)) throw new Error(`could not tell when kubelet or the node's boot started (${JSON.stringify(out.slice(0, 100))})`);
  return started * 1000;
}

async function stopKubeletAndWait(ctx: RunContext): Promise<void> {
  await run(ctx.transport, stopUnitsScript([kubeletUnitOf(ctx.journal)]), { timeoutMs: 120_000 });
  await waitUntilKubeletGone(ctx);
}

/** The unit may report inactive while the process lingers; waits until no kubelet process is left. */
async function waitUntilKubeletGone(ctx: RunContext): Promise<void> {
  await waitUntil(
    'kubelet to stop',
    async () => {
      const unit = kubeletUnitOf(ctx.journal);
      const out = await run(ctx.reader, `${unitRunsScript([unit])}; [ -n "$(${ownPidsScript('kubelet')})" ] && echo process || true`);
      const now = parseUnitRuns(out).get(unit) ?? 'unknown';
      return now === 'stopped' && !/^process$/m.test(out) ? true : RUN_WORDS[now === 'stopped' ? 'stopping' : now];
    },
    { timeoutMs: 30_000, intervalMs: 500, signal: ctx.stop },
  );
}

export async function startKubeletAndWait(ctx: RunContext): Promise<string> {
  return waitUntilNodeReady(ctx, await startKubeletUnit(ctx));
}

/** Throws when kubelet runs or will: the runtime changed under it loses sandboxes without a CNI DEL. */
export async function expectKubeletStopped(ctx: RunContext, what: string): Promise<void> {
  const now = await kubeletRun(ctx);
  if (now !== 'stopped') throw new Error(`${RUN_WORDS[now]} on ${ctx.options.node}: nothing ${what} under it; stop kubelet (and let the rollback tear down what it set up) first`);
}

/** Kubelet stopped, so nothing recreates sandboxes or runs garbage collection while the node is worked on. */
export const stopKubelet: Step = {
  name: 'stop-kubelet',
  title: 'Stop kubelet',
  undoneByBoot: true,
  undo: 'start kubelet if it ran before the run, and wait for the node to be Ready',
  async plan(ctx) {
    const now = await kubeletRun(ctx);
    if (now === 'stopped') return { actions: [], summary: RUN_WORDS.stopped };
    return { actions: [`systemctl stop ${kubeletUnitOf(ctx.journal)}`], summary: now === 'running' ? 'will stop kubelet' : `will stop kubelet (${RUN_WORDS[now]})`, detail: { was: now } };
  },
  async apply(ctx, plan) {
    await stopKubeletAndWait(ctx);
    const was = plan.detail?.was as UnitRun | undefined;
    return was === 'starting' ? `kubelet stopped (${RUN_WORDS.starting}: cancelled)` : 'kubelet stopped';
  },
  async verify(ctx) {
    await waitUntilKubeletGone(ctx);
  },
  async rollback(ctx) {
    if (!ctx.journal.prior?.kubeletActive) return 'kubelet was not running before the run';
    return `kubelet started: ${await startKubeletAndWait(ctx)}`;
  },
};

/**
 * The sandboxes kubelet set up since it started (DaemonSet and static pods, the smoke pod, on the new runtime), torn
 * down as the forward run tore down the old ones: while the runtime still knows them, before it is reinstalled, so
 * that the rollback leaks no IP. A runtime that cannot answer (often why the run rolls back) does not stop the
 * rollback: the reinstall must still happen; the line says what was not done, and the audit after it judges.
 */
async function tearDownWhatKubeletStarted(ctx: RunContext): Promise<string> {
  try {
    const plan = await teardownSandboxes.plan(ctx);
    if (plan.actions.length === 0) return '';
    return `; what kubelet set up meanwhile torn down: ${await teardownSandboxes.apply(ctx, plan)}`;
  } catch (e) {
    ctx.progress(`could not tear down what kubelet set up meanwhile: ${(e as Error).message}`);
    return `; what kubelet set up meanwhile not torn down (${(e as Error).message})`;
  }
}

/** Runtime network readiness as the runtime reports it (crictl info); "unknown" when there is no crictl. */
const NETWORK_READY_SCRIPT = `if command -v crictl >/dev/null 2>&1; then crictl info 2>/dev/null | tr -d ' \\n' | grep -q '"type":"NetworkReady","status":true' && echo ready || echo not-ready; else echo unknown; fi`;

/** calico-ipam hands out addresses from its own blocks: the node's PodCIDR (which it may not have) is not waited for. */
const needsPodCidr = async (ctx: RunContext) => (await ctx.network()).ipam !== 'calico-ipam';

/** Starts kubelet and waits for the PodCIDR, Ready and the runtime's NetworkReady, so uncordon never comes too early. */
export const startKubelet: Step = {
  name: 'start-kubelet',
  title: 'Start kubelet',
  undo: "stop kubelet again, so the runtime is reinstalled under a stopped kubelet (stop-kubelet's rollback starts it), and tear down the sandboxes it set up meanwhile",
  async plan(ctx) {
    const starting = ctx.options.dryRun ? earlierStepActs(ctx, 'stop-kubelet') || !(await kubeletActive(ctx)) : !(await kubeletActive(ctx));
    const wait = `wait for ${(await needsPodCidr(ctx)) ? 'PodCIDR, ' : ''}Ready and the runtime network`;
    return { actions: starting ? [`systemctl start ${kubeletUnitOf(ctx.journal)}`, wait] : [wait], summary: starting ? 'will start kubelet and wait' : 'kubelet running; will wait for readiness' };
  },
  async apply(ctx, plan) {
    const startedAt = plan.actions.includes(`systemctl start ${kubeletUnitOf(ctx.journal)}`) ? await startKubeletUnit(ctx) : await kubeletStartedAfterReboot(ctx);
    return waitUntilNodeReady(ctx, startedAt);
  },
  async verify(ctx) {
    const node = await getNode(ctx.cluster, ctx.options.node);
    const cidr = await needsPodCidr(ctx);
    if ((cidr && !podCidr(node)) || !isReady(node)) throw new Error(`${ctx.options.node} is not Ready${cidr ? ' with a PodCIDR' : ''}: ${readyMessage(node)}`);
  },
  rollback: (ctx) => stopKubeletForRollback(ctx),
};

/**
 * Kubelet stopped again for the runtime's rollback, and the sandboxes it set up since torn down by CNI DEL: after
 * start-kubelet, or after a reboot whose boot started it (systemd starts an enabled kubelet at boot).
 */
export async function stopKubeletForRollback(ctx: RunContext): Promise<string> {
  // Stopped whatever is-active says: a kubelet that fails to start is "activating" between systemd's restarts, and
  // systemd would start it again in the middle of the runtime's reinstall.
  const was = await kubeletRun(ctx);
  await stopKubeletAndWait(ctx);
  const stopped = `kubelet stopped for the runtime rollback${was === 'running' ? '' : ` (${RUN_WORDS[was]}${was === 'starting' ? ': cancelled' : ''})`}`;
  return `${stopped}${await tearDownWhatKubeletStarted(ctx)}`;
}

/**
 * PodCIDR, Ready and NetworkReady; a runtime network that cannot be asked is not taken as ready. With `postedSince`,
 * a Ready condition posted before then (by the kubelet before the stop) is not an answer: the started kubelet's first
 * status can still say NotReady (kubenet has no netConfig until it has synced the PodCIDR).
 */
export async function waitUntilNodeReady(ctx: RunContext, postedSince?: number): Promise<string> {
  let status = '';
  const wantsCidr = await needsPodCidr(ctx);
  await waitUntil(
    `${ctx.options.node} to be Ready${wantsCidr ? ' with a PodCIDR' : ''} and the runtime network`,
    async () => {
      const node = await getNode(ctx.cluster, ctx.options.node);
      const cidr = podCidr(node);
      const stale = postedSince !== undefined && (readyPostedAt(node) ?? 0) < postedSince;
      const nodeReady = (cidr || !wantsCidr) && isReady(node) && !stale;
      // The runtime is asked once the node says Ready (kubelet posts Ready only on a ready runtime network): one
      // command on the node then, not one a second while kubelet starts.
      const network = nodeReady ? (await run(ctx.reader, NETWORK_READY_SCRIPT)).trim() : 'not asked until the node is Ready';
      if (network === 'unknown') throw new RunbookError('couldNotAudit', `${ctx.options.node} has no crictl: the runtime's network readiness cannot be checked`);
      const cidrWords = wantsCidr ? `PodCIDR ${cidr ?? 'none'}` : `PodCIDR not used by calico-ipam`;
      status = `${cidrWords}, Ready ${readyMessage(node)}${stale ? ' (posted before kubelet started)' : ''}, runtime network ${network}`;
      return nodeReady && network === 'ready' ? true : status;
    },
    { timeoutMs: ctx.options.readyTimeoutSeconds * 1000, onChange: (seen) => ctx.progress(`waiting: ${seen}`), signal: ctx.stop },
  );
  return status;
}
