import { messageOf, RunbookError } from '../errors.js';
import type { EventSink } from './events.js';
import { throwIfStopped } from '../stop.js';
import { stepsToUndo } from './journal.js';
import type { RunReport } from './report.js';
import type { RunContext, Step } from './step.js';

/** Steps whose rollback must have worked before the node may take pods again (cordon's rollback uncordons). */
const FIT_FOR_PODS = ['upgrade-runtime', 'stop-kubelet'];

/**
 * Undoes, newest first, every step the journal records as having acted (in this process or a killed one), each
 * marked in the journal as it is undone, so a rollback that is itself killed resumes where it stopped. A node whose
 * runtime or kubelet could not be restored is not uncordoned: it is not fit for pods, and the report says so.
 */
export async function rollbackFromJournal(ctx: RunContext, steps: readonly Step[], report: RunReport, emit: EventSink): Promise<boolean> {
  const { journal } = ctx;
  journal.status = 'rolling-back';
  await ctx.saveJournal();
  let ok = true;
  for (const name of stepsToUndo(journal, steps.map((s) => s.name))) {
    // A stop ends the rollback between its steps; the journal says what is left, the same command finishes it.
    throwIfStopped(ctx.stop);
    const step = steps.find((s) => s.name === name)!;
    const record = journal.steps[name]!;
    if (name === 'cordon' && !ok) {
      const summary = `left cordoned: the rollback of ${FIT_FOR_PODS.filter((n) => journal.steps[n]?.status === 'rollback-failed').join(', ')} failed, so the node is not fit for pods`;
      report.rollback.push({ step: name, status: 'skipped', summary });
      emit({ type: 'rollback', phase: 'skipped', step: name, summary });
      continue;
    }
    if (!step.rollback) {
      record.status = 'rolled-back';
      report.rollback.push({ step: name, status: 'done', summary: step.undo });
      emit({ type: 'rollback', phase: 'done', step: name, summary: step.undo });
      await ctx.saveJournal();
      continue;
    }
    emit({ type: 'rollback', phase: 'start', step: name, summary: step.undo });
    try {
      const summary = (await step.rollback(ctx)) || 'rolled back';
      record.status = 'rolled-back';
      report.rollback.push({ step: name, status: 'done', summary });
      emit({ type: 'rollback', phase: 'done', step: name, summary });
    } catch (error) {
      // Without the Lease nothing more may change: the rollback stops here, and whoever holds the Lease now owns it.
      // Nor after the operator's stop: the step stays to be undone by the same command.
      if ((error instanceof RunbookError && error.code === 'leaseLost') || ctx.stop.aborted) throw error;
      record.status = 'rollback-failed';
      if (FIT_FOR_PODS.includes(name)) ok = false;
      report.rollback.push({ step: name, status: 'failed', summary: messageOf(error) });
      emit({ type: 'rollback', phase: 'failed', step: name, summary: messageOf(error) });
    }
    record.finishedAt = new Date().toISOString();
    await ctx.saveJournal();
  }
  const failed = Object.values(journal.steps).some((r) => r?.status === 'rollback-failed');
  journal.status = failed ? 'rollback-failed' : 'rolled-back';
  return !failed;
}
