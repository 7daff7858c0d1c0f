import { randomUUID } from 'node:crypto';
import pRetry from 'p-retry';
import type { Cluster } from '../cluster/api.js';
import { holderIdentity } from '../cluster/lease.js';
import { summarize } from '../leaks/types.js';
import { ConnectionLostError, run, type Transport } from '../node/transport/types.js';
import { changeKind, compareVersionsScript } from '../node/packages/index.js';
import { bootIdentity } from '../node/reboot.js';
import { STEPS } from '../steps/index.js';
import { releaseKeptDebs } from '../steps/upgrade-runtime.js';
import type { PreflightPlan } from '../steps/preflight.js';
import type { VerifyPlan } from '../steps/verify.js';
import { ExitCode, RunbookError, messageOf, type ExitCodeName } from '../errors.js';
import { makeContext } from './context.js';
import { waitForEarlierProcess } from './resume.js';
import { kubeletAsBefore, readBoot, stepsUndone, stopWhatABootStarted } from './boot.js';
import { settleStopped } from './stopped.js';
import { NEVER_STOPPED, throwIfStopped } from '../stop.js';
import type { EventSink } from './events.js';
import { finishedEarlier, isRollingBack, isUnfinished, newJournal, type Journal } from './journal.js';
import { HOOK_FLAGS, hooksOfStep, runHook } from './hooks.js';
import { LeaseKeeper } from './lease-keeper.js';
import { requirePermissions, upgradePermissions } from '../cluster/permissions.js';
import { hasCalico } from '../leaks/calico/index.js';
import { hasWhereabouts } from '../leaks/whereabouts/read.js';
import { NodeMarker } from './node-marker.js';
import { smokeNamespaceOf, validateRunOptions, type RunOptions } from './options.js';
import type { RunReport, StepReport } from './report.js';
import { rollbackFromJournal } from './rollback.js';
import type { RunContext, Step, StepPlan } from './step.js';

export interface RunInput {
  options: RunOptions;
  cluster: Cluster;
  transport: Transport;
  events?: EventSink;
  /** The operator's stop (signals, a cancelled `pulumi up`): the run ends at its next safe point, its Lease released. */
  stop?: AbortSignal;
}

type Mode = RunReport['mode'];
const codeOf = (e: unknown): ExitCodeName | 'internal' => (e instanceof RunbookError ? e.code : 'internal');
const fmt = (t: Record<string, string>) => Object.entries(t).map(([p, v]) => `${p}=${v}`).join(',');

/**
 * Runs the runbook on one node under its Lease: preflight, then every step as plan -> apply -> verify, each written
 * to the journal before it acts. Before the point of no return (uncordon) a failure rolls back, from the journal, what
 * this run or a killed earlier process of it did; after it, nothing is downgraded and the failure has its own exit
 * code. A killed run is resumed by the same command: steps done are not done again. A dry run plans every step and
 * changes nothing. Throws only before anything is decided (bad options, the Lease held by a live run).
 */
export async function runUpgrade(input: RunInput): Promise<RunReport> {
  const options = validateRunOptions(input.options);
  const emit: EventSink = input.events ?? (() => undefined);
  const stop = input.stop ?? NEVER_STOPPED;
  const started = Date.now();
  const holder = holderIdentity();
  let currentStep = 'preflight';
  const line = (message: string) => emit({ type: 'progress', step: currentStep, message });
  const cluster = input.cluster.withHooks({ outageToleranceMs: options.outageToleranceSeconds * 1000 });
  const keeper = new LeaseKeeper(cluster.withHooks({ onRetry: line }), {
    ...options.lease,
    namespace: options.leaseNamespace,
    node: options.node,
    holder,
    outageToleranceSeconds: options.outageToleranceSeconds,
    onLine: line,
    stop,
  });
  // What the run will ask of the API, asked first: a missing permission found after the cordon strands the node.
  const [calico, whereabouts] = await Promise.all([hasCalico(cluster), hasWhereabouts(cluster)]);
  const wanted = upgradePermissions(options.leaseNamespace, calico, whereabouts, smokeNamespaceOf(options)).filter((p) => !options.dryRun || !p.write);
  await requirePermissions(cluster.withHooks({ onRetry: line }), wanted, `the kubeconfig's user ${cluster.user}`);
  // Read-only first: a run refused by preflight leaves no trace, not even a Lease object.
  const previous = await keeper.inspect();
  const mode = decideMode(previous, options);
  const acquire = async () => {
    throwIfStopped(stop);
    const seen = await keeper.acquire();
    if (seen?.runId !== previous?.runId || seen?.status !== previous?.status) {
      throw new RunbookError('locked', `another run changed the journal of ${options.node} while this one was starting (now run ${seen?.runId ?? 'none'}, ${seen?.status ?? 'none'}); run again`);
    }
  };
  let journal: Journal | undefined;
  let touched = false;
  try {
    // Inside the try: a take refused after it was made (the journal changed meanwhile) gives the Lease up again.
    if (!options.dryRun && mode && mode !== 'run') await acquire();
    journal = mode === 'run' || !mode ? newJournal(randomUUID(), options.node, holder, options.targets) : { ...previous!, holder };
    const report = newReport(options, journal, mode ?? 'rollback', started);
    let marker: NodeMarker | undefined;
    const tracking: EventSink = (e) => {
      if (e.type === 'step' && e.phase === 'start') currentStep = e.step;
      marker?.observe(e);
      emit(e);
    };
    const ctx = makeContext({ options, cluster, transport: input.transport, journal, resuming: mode !== 'run', keeper, emit: tracking, currentStep: () => currentStep, stop });
    if (!options.dryRun) marker = new NodeMarker(ctx.recordingCluster, options.node, journal.runId, line);
    // A resumed run or a rollback holds the Lease from the start; a new one from when it decides to act.
    const markBegin = (state: string) => marker?.begin(journal!.prior?.packages ?? {}, journal!.targets, state);
    if (mode === 'resume') markBegin('preflight');
    if (mode === 'rollback') markBegin('failed');
    tracking({ type: 'run', phase: 'start', node: options.node, runId: journal.runId, dryRun: options.dryRun, resuming: mode !== 'run', mode: mode ?? 'rollback' });
    if (!mode) {
      report.result = 'nothing-to-do';
      report.exitCode = ExitCode.ok;
      report.next = `no unfinished run on ${options.node} to roll back${previous ? ` (the last one, ${previous.runId}, ${previous.status}): a finished run is never undone` : ''}`;
    } else if (mode === 'rollback') {
      touched = true;
      await finishRollback(ctx, report, tracking);
    } else {
      touched = await runForward(ctx, report, tracking, keeper, async () => {
        await acquire();
        markBegin('draining');
      });
    }
    if (touched) report.steps = mergeJournal(report.steps, journal);
    if (touched && !options.dryRun) await releaseKeptDebs(ctx);
    // A stopped run read the node once already (nodeNow, bounded): a node that stopped answering is not asked again.
    if (report.result === 'stopped') report.versions.after = report.nodeNow?.packages ?? (report.nodeNow ? {} : { ...report.versions.before });
    else report.versions.after = options.dryRun ? {} : await installedVersions(ctx, Object.keys(options.targets)).catch(() => ({}));
    // Refused before it read the node's prior state, it changed nothing: what is installed now is what was.
    if (!touched && Object.keys(report.versions.before).length === 0) report.versions.before = { ...report.versions.after };
    report.pointOfNoReturn = journal.pointOfNoReturn;
    report.backups = journal.backups;
    if (journal.reboot) report.reboot = { before: journal.reboot.before, after: journal.reboot.after };
    await marker?.finish(report);
    report.durationMs = Date.now() - started;
    return report;
  } finally {
    if (!options.dryRun && !keeper.isLost) {
      if (touched && journal) await keeper.save(journal).catch(() => undefined);
      await keeper.release().catch(() => undefined);
    }
  }
}

/** undefined: --rollback with no unfinished run, so nothing to do (a finished run is never undone). */
function decideMode(previous: Journal | undefined, options: RunOptions): Mode | undefined {
  if (options.dryRun || !isUnfinished(previous)) return options.rollback ? undefined : 'run';
  if (isRollingBack(previous)) return 'rollback';
  if (options.rollback) {
    if (previous.pointOfNoReturn) {
      throw new RunbookError('usage', `the unfinished run ${previous.runId} on ${options.node} passed its point of no return (the node was uncordoned): nothing is rolled back; finish it with --to ${fmt(previous.targets)}`);
    }
    return 'rollback';
  }
  if (JSON.stringify(previous.targets) !== JSON.stringify(options.targets)) {
    throw new RunbookError('usage', `node ${options.node} has an unfinished run toward ${fmt(previous.targets)}: finish it with the same --to, or roll it back with --rollback`);
  }
  return 'resume';
}

/** The steps in order; true when the run changed (or may have changed) the node, so its journal is kept. */
async function runForward(ctx: RunContext, report: RunReport, emit: EventSink, keeper: LeaseKeeper, acquire: () => Promise<void>): Promise<boolean> {
  const { journal, options } = ctx;
  const reports = new Map(report.steps.map((s) => [s.name, s]));
  // A resumed run holds the Lease and its journal from the start: whatever happens, its journal is written back.
  let journaled = ctx.resuming;
  try {
    if (ctx.resuming && !options.dryRun) {
      await waitForEarlierProcess(ctx);
    }
    if (!options.dryRun) await readBoot(ctx);
    const redo = ctx.resuming && !options.dryRun ? await stepsUndone(ctx, report) : [];
    const pre = (await runStep(ctx, STEPS[0]!, 0, reports, emit)) as PreflightPlan;
    journal.prior ??= pre.prior;
    report.versions.before = journal.prior.packages;
    if (!options.dryRun && pre.maintenanceNeeded) {
      if (!ctx.resuming) await acquire();
      await ctx.saveJournal();
      journaled = true;
    }
    for (const [i, step] of STEPS.entries()) {
      if (i === 0) continue;
      // The safe point between steps: a stop asked meanwhile ends the run here, before the next step acts.
      throwIfStopped(ctx.stop);
      if (!pre.maintenanceNeeded && step.name !== 'verify') {
        skip(reports, emit, step, 'nothing-to-do', [Object.keys(options.targets).length > 0 ? 'runtime already at target' : '', options.reboot === 'if-required' ? 'no reboot required' : ''].filter(Boolean).join(', '));
        continue;
      }
      if (ctx.resuming && finishedEarlier(journal, step.name) && !redo.includes(step.name)) {
        skip(reports, emit, step, 'done-earlier', journal.steps[step.name]!.summary);
        continue;
      }
      if (step.name === 'uncordon' && !options.dryRun) {
        // The point of no return, written before the node may take pods: from here on the run only finishes forward.
        journal.pointOfNoReturn = true;
        await ctx.saveJournal();
      }
      const plan = await runStep(ctx, step, i, reports, emit, report);
      if (step.name === 'verify' && (plan as VerifyPlan).audit) report.audit = summarize((plan as VerifyPlan).audit!);
    }
    if (journaled) journal.status = 'completed';
    report.result = options.dryRun ? 'planned' : pre.maintenanceNeeded ? await changeOf(ctx) : 'nothing-to-do';
    report.exitCode = ExitCode.ok;
  } catch (error) {
    await settleFailure(ctx, report, emit, error, keeper);
  }
  return journaled;
}

/** What a failure means depends on where the run stood: before or after the point of no return, Lease or not. */
async function settleFailure(ctx: RunContext, report: RunReport, emit: EventSink, error: unknown, keeper: LeaseKeeper): Promise<void> {
  const { journal, options } = ctx;
  const code = codeOf(error);
  report.error = { code, message: messageOf(error) };
  report.exitCode = error instanceof RunbookError ? error.exitCode : ExitCode.internal;
  report.result = 'failed';
  journal.error = report.error.message;
  const details = error instanceof RunbookError ? error.details : undefined;
  if (code === 'leaksFound' && details && typeof details === 'object' && 'findings' in details) report.audit = summarize(details as Parameters<typeof summarize>[0]);
  // The Lease not renewable through an API outage (nobody took it): past the point of no return, a failure like any
  // other there (the run only finishes forward); the same command resumes once the API is back.
  const outageAfterNoReturn = code === 'leaseLost' && !keeper.isLost && journal.pointOfNoReturn;
  if (keeper.isLost || (code === 'leaseLost' && !outageAfterNoReturn)) return stoppedByLease(report, keeper, options);
  if (ctx.stop.aborted) return settleStopped(ctx, report, error, 'run');
  if (options.dryRun) return;
  if (journal.pointOfNoReturn) {
    // The node may already run new pods: a downgrade now would disrupt them. Reported, never rolled back.
    if (code === 'leaksFound') {
      report.result = 'leaks-found';
      journal.status = 'completed';
      report.next = `the node serves on the new runtime; release what leaked with audit-node ${options.node} --reclaim`;
    } else {
      const couldNotLook = code === 'couldNotAudit' || (outageAfterNoReturn && report.steps.find((s) => s.status === 'failed')?.name === 'verify');
      report.result = couldNotLook ? 'could-not-audit' : 'failed-after-point-of-no-return';
      report.exitCode = couldNotLook ? ExitCode.couldNotAudit : ExitCode.afterPointOfNoReturn;
      report.next = `the node was upgraded and uncordoned; nothing was downgraded. Run the same command again to finish the check`;
    }
    return;
  }
  const acted = Object.values(journal.steps).some((r) => r && r.status !== 'nothing-to-do');
  if (code === 'rebootTimeout') {
    // Nothing on the node can be undone while it does not answer: the run stays unfinished, the node cordoned.
    report.next = `${options.node} stays cordoned; once it answers on a new boot, run the same command again to finish (or roll back with --rollback)`;
    return;
  }
  if (acted && (code === 'hostKey' || code === 'authentication')) {
    // The host answering is not the one the run changed, or it refuses us (re-imaged across a reboot, or not the node
    // at all): a rollback would send it commands too. Nothing more is sent; the run stays unfinished, the node cordoned.
    const fix = code === 'hostKey' ? 'once known_hosts has the key the node really has' : 'once the login works on it again';
    report.next = `nothing more was sent to ${options.node} and nothing was rolled back: it stays cordoned. Find out why (a re-imaged node? another host?); ${fix}, run the same command again to finish (or roll back with --rollback)`;
    return;
  }
  if (code === 'leaksFound') {
    report.result = 'leaks-found';
    // Proof before uncordon failed on leaks: a downgrade would not free them, and pods must not land on them.
    report.next = acted
      ? `${options.node} stays cordoned on the new runtime: release the leaks (audit-node ${options.node} --reclaim), then run the same command again to finish, or roll back with --rollback`
      : `nothing was changed; release the leaks with audit-node ${options.node} --reclaim`;
    return;
  }
  if (!acted) {
    if (code === 'couldNotAudit') report.result = 'could-not-audit';
    journal.status = 'failed';
    return;
  }
  let ok: boolean;
  try {
    await stopWhatABootStarted(ctx, report, emit);
    ok = await rollbackFromJournal(ctx, STEPS, report, emit);
    if (ok) await kubeletAsBefore(ctx, report, emit);
  } catch (e) {
    if (ctx.stop.aborted) return settleStopped(ctx, report, e, 'rollback');
    // The rollback needs the Lease too: lost to another run, or not renewable (nor its journal writable) through the
    // outage that failed the step. A rollback that could not even record its start leaves the run to be resumed.
    if (codeOf(e) !== 'leaseLost' && codeOf(e) !== 'unreachable') throw e;
    if (report.rollback.length === 0) journal.status = 'running';
    return stoppedByLease(report, keeper, options);
  }
  report.result = ok ? 'rolled-back' : 'rollback-failed';
  report.exitCode = ok ? ExitCode.stepFailedRolledBack : ExitCode.rollbackFailed;
  if (!ok) report.next = `run the same command again to retry the rollback (the journal on the Lease says what is left to undo)`;
}

/**
 * The run stopped changing the node for want of its Lease: another run took it (exit 16), or the API did not answer
 * past the outage tolerance so it could not be renewed, nobody else holding it as far as this run saw (exit 5).
 */
function stoppedByLease(report: RunReport, keeper: LeaseKeeper, options: RunOptions): void {
  if (keeper.isLost) {
    report.result = 'lease-lost';
    report.exitCode = ExitCode.leaseLost;
    report.next = `another run holds the Lease of ${options.node} now and owns what is left; this run changed nothing after it lost the Lease`;
    return;
  }
  report.result = 'api-outage';
  report.exitCode = ExitCode.unreachable;
  report.next = `the Kubernetes API did not answer for longer than the outage tolerance (${options.outageToleranceSeconds}s), so the Lease could not be renewed and this run stopped changing ${options.node} where it was (nobody else took the Lease as far as it saw); once the API answers, run the same command again to ${report.rollback.length > 0 ? 'finish the rollback' : 'finish, or roll back with --rollback'}`;
}

async function finishRollback(ctx: RunContext, report: RunReport, emit: EventSink): Promise<void> {
  report.versions.before = ctx.journal.prior?.packages ?? {};
  try {
    await waitForEarlierProcess(ctx);
    await stopWhatABootStarted(ctx, report, emit);
    const ok = await rollbackFromJournal(ctx, STEPS, report, emit);
    if (ok) await kubeletAsBefore(ctx, report, emit);
    report.result = ok ? 'rolled-back' : 'rollback-failed';
    report.exitCode = ok ? ExitCode.stepFailedRolledBack : ExitCode.rollbackFailed;
    if (!ok) report.next = 'run the same command again to retry the rollback';
  } catch (error) {
    if (ctx.stop.aborted) return settleStopped(ctx, report, error, 'rollback');
    report.error = { code: codeOf(error), message: messageOf(error) };
    report.result = codeOf(error) === 'leaseLost' ? 'lease-lost' : 'rollback-failed';
    report.exitCode = error instanceof RunbookError && error.code === 'leaseLost' ? ExitCode.leaseLost : ExitCode.rollbackFailed;
  }
}

/**
 * A step whose connection to the node broke is planned and applied again from what the node now is (steps are
 * idempotent: the plan observes), on a new connection: a cut session costs a retry, not a rollback. A node that
 * booted meanwhile (a power cut) first has what the boot undid done again (kubelet stopped, its sandboxes torn down).
 */
export async function runStep(ctx: RunContext, step: Step, index: number, reports: Map<string, StepReport>, emit: EventSink, report?: RunReport): Promise<StepPlan> {
  let attempt = 0;
  let lostAt: number | undefined;
  let saidWaiting = false;
  // A node that went away under the step (a power cut: the session lost, then no answer) is waited for as long as
  // a reboot may take, then what its boot undid is done again before the step; never a rollback into silence.
  const waitedFor = (error: unknown) => lostAt !== undefined && error instanceof RunbookError && error.code === 'unreachable' && Date.now() - lostAt < ctx.options.rebootTimeoutSeconds * 1000;
  return pRetry(
    async () => {
      if (attempt++ > 0 && report) {
        // Read, not guessed: a boot that cannot be read yet (the node coming back) fails this try, to be retried.
        ctx.boot.now = await bootIdentity(ctx.reader);
        for (const name of await stepsUndone(ctx, report)) {
          const i = STEPS.findIndex((s) => s.name === name);
          if (i < index) await runStepOnce(ctx, STEPS[i]!, i, reports, emit);
        }
      }
      return runStepOnce(ctx, step, index, reports, emit);
    },
    {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: 2_000,
      maxTimeout: 5_000,
      shouldRetry: ({ error, attemptNumber }) => !ctx.stop.aborted && ((error instanceof ConnectionLostError && attemptNumber <= 3) || waitedFor(error)),
      onFailedAttempt: ({ error }) => {
        if (error instanceof ConnectionLostError) {
          lostAt ??= Date.now();
          ctx.progress(`${error.message}; planning the step again on a new connection`);
        } else if (waitedFor(error) && !saidWaiting) {
          saidWaiting = true;
          ctx.progress(`${ctx.options.node} does not answer since its session was lost (${messageOf(error)}); waiting up to ${ctx.options.rebootTimeoutSeconds}s for it (a power cut?)`);
        }
      },
    },
  );
}

async function runStepOnce(ctx: RunContext, step: Step, index: number, reports: Map<string, StepReport>, emit: EventSink): Promise<StepPlan> {
  const t0 = Date.now();
  const record = reports.get(step.name)!;
  const { journal, options } = ctx;
  emit({ type: 'step', phase: 'start', step: step.name, index, total: STEPS.length, title: step.title });
  const startedAt = new Date(t0).toISOString();
  const journaled = !options.dryRun && step.name !== 'preflight';
  try {
    const plan = await step.plan(ctx);
    // A step with a hook acts (and shows the hook in its plan) even when it has nothing else to do.
    const hooks = hooksOfStep(options.hooks, step.name);
    plan.actions = [...plan.actions, ...hooks.map((h) => `hook --${HOOK_FLAGS[h.point]}`)];
    (ctx.planned as Record<string, StepPlan>)[step.name] = plan;
    Object.assign(record, { summary: plan.summary, actions: plan.actions, detail: plan.detail });
    if (options.dryRun || (plan.actions.length === 0 && !step.alwaysApply)) {
      const phase = options.dryRun ? 'planned' : 'nothing-to-do';
      Object.assign(record, { status: phase, durationMs: Date.now() - t0 });
      if (journaled) {
        journal.steps[step.name] = { status: 'nothing-to-do', startedAt, finishedAt: new Date().toISOString(), summary: plan.summary };
        await ctx.saveJournal();
      }
      emit({ type: 'step', phase, step: step.name, summary: plan.summary, durationMs: record.durationMs, actions: plan.actions });
      return plan;
    }
    // Written before it acts: if this process dies now, the resume and the rollback know the step may have acted.
    if (journaled) {
      journal.steps[step.name] = { status: 'applying', startedAt, summary: plan.summary };
      await ctx.saveJournal();
    }
    for (const h of hooks) if (h.when === 'before') await runHook(ctx, h.point);
    const result = await step.apply(ctx, plan);
    await step.verify(ctx, plan);
    for (const h of hooks) if (h.when === 'after') await runHook(ctx, h.point);
    const summary = result || plan.summary;
    Object.assign(record, { status: 'done', summary, durationMs: Date.now() - t0, detail: plan.detail });
    // The run's own reboot moved it to a new boot: what follows is recorded on that one.
    if (step.name === 'reboot-node' && journal.reboot?.after) ctx.boot.now = journal.reboot.after;
    if (journaled) {
      journal.steps[step.name] = { status: 'done', startedAt, finishedAt: new Date().toISOString(), summary, ...(ctx.boot.now ? { boot: ctx.boot.now } : {}) };
      await ctx.saveJournal();
    }
    emit({ type: 'step', phase: 'done', step: step.name, summary, durationMs: record.durationMs, actions: plan.actions });
    return plan;
  } catch (error) {
    // Stopped by the operator, whatever error the stop surfaced as (an eviction refused by the fence, a wait given up).
    const status = ctx.stop.aborted ? 'stopped' : 'failed';
    Object.assign(record, { status, error: messageOf(error), durationMs: Date.now() - t0 });
    // A step that never got to act stays unrecorded: nothing of it to undo.
    const rec = journal.steps[step.name];
    if (journaled && rec?.status === 'applying') Object.assign(rec, { status, finishedAt: new Date().toISOString(), summary: messageOf(error) });
    emit({ type: 'step', phase: status, step: step.name, error: messageOf(error), durationMs: record.durationMs });
    throw error;
  }
}

function skip(reports: Map<string, StepReport>, emit: EventSink, step: Step, phase: 'nothing-to-do' | 'done-earlier', summary: string): void {
  Object.assign(reports.get(step.name)!, { status: phase, summary });
  emit({ type: 'step', phase: 'start', step: step.name, index: STEPS.indexOf(step), total: STEPS.length, title: step.title });
  emit({ type: 'step', phase, step: step.name, summary, durationMs: 0, actions: [] });
}

function newReport(options: RunOptions, journal: Journal, mode: Mode, started: number): RunReport {
  return {
    node: options.node,
    runId: journal.runId,
    dryRun: options.dryRun,
    resumed: mode !== 'run',
    mode,
    pointOfNoReturn: journal.pointOfNoReturn,
    result: 'failed',
    exitCode: ExitCode.internal,
    startedAt: new Date(started).toISOString(),
    durationMs: 0,
    versions: { before: {}, target: journal.targets, after: {} },
    steps: STEPS.map((s) => ({ name: s.name, title: s.title, status: 'not-run', summary: '', actions: [], durationMs: 0 })),
    rollback: [],
    backups: journal.backups,
  };
}

/** Steps this process did not run show what the journal says of them (done by a killed process, rolled back). */
function mergeJournal(steps: StepReport[], journal: Journal): StepReport[] {
  return steps.map((s) => {
    const rec = journal.steps[s.name];
    if (!rec || s.status !== 'not-run') return s;
    return { ...s, status: rec.status === 'done' ? 'done-earlier' : rec.status, summary: rec.summary };
  });
}

/** Upgraded, downgraded, changed or maintained: the prior versions against the targets, as dpkg orders them. */
async function changeOf(ctx: RunContext): Promise<RunReport['result']> {
  const prior = ctx.journal.prior?.packages ?? {};
  const changes = Object.entries(ctx.options.targets).filter(([p, v]) => prior[p] && prior[p] !== v).map(([p, v]) => [p, prior[p]!, v] as [string, string, string]);
  if (changes.length === 0) return ctx.journal.reboot?.after ? 'rebooted' : 'maintained';
  // Only the word for it: a node that does not answer now is reported as changed, never fails a finished run.
  const out = await run(ctx.reader, compareVersionsScript(changes)).catch(() => '');
  return out ? changeKind(out.split('\n').map((l) => l.split(' ')[1] ?? '').filter(Boolean)) : 'changed';
}

async function installedVersions(ctx: RunContext, packages: string[]): Promise<Record<string, string>> {
  return ctx.installedVersions(packages);
}
