import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Cluster } from '../cluster/api.js';
import { detectNetwork, type NetworkInfo } from '../node/cni/network-mode.js';
import { detectFlavor } from '../node/runtime/flavor.js';
import { readNodeState } from '../node/state/index.js';
import type { NodeState } from '../node/state/types.js';
import type { Transport } from '../node/transport/types.js';
import { STEPS } from '../steps/index.js';
import type { PreflightPlan } from '../steps/preflight.js';
import type { VerifyPlan } from '../steps/verify.js';
import { summarize } from '../leaks/types.js';
import { ExitCode, RunbookError, messageOf, type ExitCodeName } from './errors.js';
import type { EventSink, RunEvent } from './events.js';
import { isUnfinished, newJournal, type Journal, type StepName } from './journal.js';
import { LeaseKeeper } from './lease-keeper.js';
import { validateRunOptions, type RunOptions } from './options.js';
import type { RunReport, RunResult, StepReport } from './report.js';
import type { RunContext, Step, StepPlan } from './step.js';

export interface RunInput {
  options: RunOptions;
  cluster: Cluster;
  transport: Transport;
  events?: EventSink;
}

const codeOf = (e: unknown): ExitCodeName | 'internal' => (e instanceof RunbookError ? e.code : 'internal');

/**
 * Runs the runbook on one node: preflight, then every step as plan -> apply -> verify, journaled on the node's Lease;
 * a failure rolls back what was done, in reverse, to the recorded prior state. A dry run plans every step and changes
 * nothing. Never throws for a step failure: the report says what happened, with its exit code.
 */
export async function runUpgrade(input: RunInput): Promise<RunReport> {
  const options = validateRunOptions(input.options);
  const sink: EventSink = input.events ?? (() => undefined);
  const started = Date.now();
  const holder = `node-maint/${hostname()}/${process.pid}`;
  const keeper = new LeaseKeeper(input.cluster, { namespace: options.leaseNamespace, node: options.node, holder, durationSeconds: options.leaseDurationSeconds });
  const previous = await keeper.inspect();
  const resuming = !options.dryRun && isUnfinished(previous.journal);
  if (resuming && JSON.stringify(previous.journal!.targets) !== JSON.stringify(options.targets)) {
    throw new RunbookError('usage', `node ${options.node} has an unfinished run toward ${fmt(previous.journal!.targets)}; finish it with the same --to first`);
  }
  if (previous.holder && !resuming && !options.dryRun) {
    throw new RunbookError('locked', `node ${options.node} is being maintained by ${previous.holder}`);
  }
  const journal: Journal = resuming ? { ...previous.journal!, holder } : newJournal(randomUUID(), options.node, holder, options.targets);
  const steps = new Map<StepName, StepReport>(STEPS.map((s) => [s.name, { name: s.name, title: s.title, status: 'not-run', summary: '', actions: [], durationMs: 0 }]));
  const { ctx, emit } = makeContext(input, options, journal, resuming, keeper, sink);
  emit({ type: 'run', phase: 'start', node: options.node, runId: journal.runId, dryRun: options.dryRun, resuming });

  const report: RunReport = {
    node: options.node,
    runId: journal.runId,
    dryRun: options.dryRun,
    resumed: resuming,
    result: 'failed',
    exitCode: ExitCode.internal,
    startedAt: new Date(started).toISOString(),
    durationMs: 0,
    versions: { before: {}, target: options.targets, after: {} },
    steps: [],
    rollback: [],
    backups: journal.backups,
  };
  const applied: Step[] = [];
  try {
    const pre = (await runStep(ctx, STEPS[0]!, 0, steps, emit)) as PreflightPlan;
    report.versions.before = pre.prior.packages;
    journal.prior = pre.prior;
    if (!options.dryRun && pre.maintenanceNeeded) {
      await keeper.acquire(resuming || Boolean(previous.holder));
      await keeper.save(journal);
    }
    for (const [i, step] of STEPS.entries()) {
      if (i === 0) continue;
      if (!pre.maintenanceNeeded && step.name !== 'verify') {
        steps.set(step.name, { ...steps.get(step.name)!, status: 'nothing-to-do', summary: 'runtime already at target' });
        emit({ type: 'step', phase: 'nothing-to-do', step: step.name, summary: 'runtime already at target', durationMs: 0, actions: [] });
        continue;
      }
      const plan = await runStep(ctx, step, i, steps, emit, () => applied.push(step));
      if (step.name === 'verify') {
        const audit = (plan as VerifyPlan).audit;
        if (audit) report.audit = summarize(audit);
      }
    }
    journal.status = 'completed';
    report.result = options.dryRun ? 'planned' : pre.maintenanceNeeded ? 'upgraded' : 'nothing-to-do';
    report.exitCode = ExitCode.ok;
  } catch (error) {
    const code = codeOf(error);
    report.error = { code, message: messageOf(error) };
    report.exitCode = error instanceof RunbookError ? error.exitCode : ExitCode.internal;
    report.result = 'failed';
    const details = error instanceof RunbookError ? error.details : undefined;
    if (code === 'leaksFound' && details && typeof details === 'object' && 'findings' in details) {
      report.audit = summarize(details as Parameters<typeof summarize>[0]);
      report.result = 'leaks-found';
      journal.status = 'completed';
    } else if (!options.dryRun && applied.length > 0) {
      // What was done is undone, newest first; the failed step too, since it may have half-changed the node.
      const ok = await rollback(ctx, [...applied].reverse(), report, emit);
      journal.status = ok ? 'rolled-back' : 'rollback-failed';
      report.result = ok ? 'rolled-back' : 'rollback-failed';
      report.exitCode = ok ? ExitCode.stepFailedRolledBack : ExitCode.rollbackFailed;
      journal.error = report.error.message;
    }
  } finally {
    if (!options.dryRun) {
      await keeper.save(journal).catch(() => undefined);
      await keeper.release().catch(() => undefined);
    }
  }
  report.steps = [...steps.values()];
  report.backups = journal.backups;
  report.versions.after = options.dryRun ? {} : await installed(ctx, Object.keys(options.targets)).catch(() => ({}));
  report.durationMs = Date.now() - started;
  return report;
}

async function runStep(
  ctx: RunContext,
  step: Step,
  index: number,
  reports: Map<StepName, StepReport>,
  emit: EventSink,
  onApplied?: () => void,
): Promise<StepPlan> {
  const t0 = Date.now();
  const record = reports.get(step.name)!;
  emit({ type: 'step', phase: 'start', step: step.name, index, total: STEPS.length, title: step.title });
  const journalRecord = { status: 'planned' as const, startedAt: new Date(t0).toISOString(), summary: '' };
  try {
    const plan = await step.plan(ctx);
    (ctx.planned as Record<string, StepPlan>)[step.name] = plan;
    Object.assign(record, { summary: plan.summary, actions: plan.actions, detail: plan.detail });
    if (ctx.options.dryRun || (plan.actions.length === 0 && !step.alwaysApply)) {
      const phase = ctx.options.dryRun ? 'planned' : 'nothing-to-do';
      Object.assign(record, { status: phase, durationMs: Date.now() - t0 });
      if (!ctx.options.dryRun && step.name !== 'preflight') {
        ctx.journal.steps[step.name] = { ...journalRecord, status: 'nothing-to-do', finishedAt: new Date().toISOString(), summary: plan.summary };
        await ctx.saveJournal();
      }
      emit({ type: 'step', phase, step: step.name, summary: plan.summary, durationMs: record.durationMs, actions: plan.actions });
      return plan;
    }
    // Only a step that changes something is undone on failure; a read-only check (the audit) is not.
    if (plan.actions.length > 0) onApplied?.();
    const result = await step.apply(ctx, plan);
    await step.verify(ctx, plan);
    const summary = result || plan.summary;
    Object.assign(record, { status: 'done', summary, durationMs: Date.now() - t0, detail: plan.detail });
    ctx.journal.steps[step.name] = { ...journalRecord, status: 'done', finishedAt: new Date().toISOString(), summary };
    await ctx.saveJournal();
    emit({ type: 'step', phase: 'done', step: step.name, summary, durationMs: record.durationMs, actions: plan.actions });
    return plan;
  } catch (error) {
    Object.assign(record, { status: 'failed', error: messageOf(error), durationMs: Date.now() - t0 });
    ctx.journal.steps[step.name] = { ...journalRecord, status: 'failed', finishedAt: new Date().toISOString(), summary: messageOf(error) };
    emit({ type: 'step', phase: 'failed', step: step.name, error: messageOf(error), durationMs: record.durationMs });
    throw error;
  }
}

async function rollback(ctx: RunContext, undo: Step[], report: RunReport, emit: EventSink): Promise<boolean> {
  let ok = true;
  for (const step of undo) {
    if (!step.rollback) continue;
    emit({ type: 'rollback', phase: 'start', step: step.name, summary: '' });
    try {
      const summary = (await step.rollback(ctx)) || 'rolled back';
      report.rollback.push({ step: step.name, status: 'done', summary });
      const rec = ctx.journal.steps[step.name];
      if (rec) rec.status = 'rolled-back';
      emit({ type: 'rollback', phase: 'done', step: step.name, summary });
    } catch (error) {
      ok = false;
      report.rollback.push({ step: step.name, status: 'failed', summary: messageOf(error) });
      emit({ type: 'rollback', phase: 'failed', step: step.name, summary: messageOf(error) });
    }
  }
  return ok;
}

function makeContext(input: RunInput, options: RunOptions, journal: Journal, resuming: boolean, keeper: LeaseKeeper, emit: EventSink): { ctx: RunContext; emit: EventSink } {
  let cached: NodeState | undefined;
  let network: NetworkInfo | undefined;
  let currentStep: StepName = 'preflight';
  const ctx: RunContext = {
    options,
    runId: journal.runId,
    cluster: input.cluster,
    transport: input.transport,
    journal,
    resuming,
    planned: {},
    async nodeState(o = {}) {
      if (!cached || o.fresh) cached = await readNodeState(input.transport, options.commandTimeoutSeconds * 1000);
      return cached;
    },
    async network() {
      if (!network) {
        const state = await ctx.nodeState();
        network = detectNetwork(state, journal.prior?.flavor ?? detectFlavor(state));
      }
      return network;
    },
    progress(message) {
      emit({ type: 'progress', step: currentStep, message } satisfies RunEvent);
    },
    saveJournal: () => (options.dryRun ? Promise.resolve() : keeper.save(journal)),
  };
  // Progress lines are attributed to the step that is running.
  const tracking: EventSink = (e) => {
    if (e.type === 'step' && e.phase === 'start') currentStep = e.step;
    emit(e);
  };
  return { ctx, emit: tracking };
}

async function installed(ctx: RunContext, packages: string[]): Promise<Record<string, string>> {
  const state = await ctx.nodeState({ fresh: true });
  return Object.fromEntries(packages.map((p) => [p, state.packages[p] ?? '']));
}

const fmt = (t: Record<string, string>) => Object.entries(t).map(([p, v]) => `${p}=${v}`).join(',');

export type { RunResult };
