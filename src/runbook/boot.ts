import { bootIdentity, shortBoot } from '../node/reboot.js';
import { kubeletActive, kubeletRun, startKubeletAndWait, stopKubeletForRollback } from '../steps/kubelet.js';
import { STEPS } from '../steps/index.js';
import type { EventSink } from './events.js';
import { undoneByBoot } from './journal.js';
import type { RunReport } from './report.js';
import type { RunContext } from './step.js';

// A boot the run did not ask (a crash, a power cut) undoes what some steps did: systemd starts the enabled kubelet,
// which sets up sandboxes again. Those steps are not "done earlier" on the new boot: a resume does them again (kubelet
// stopped, the boot's sandboxes torn down by CNI DEL, the state cleared) before the runtime is touched, and a
// rollback stops kubelet and tears down before it reinstalls. So does a kubelet started again by hand. The report
// says what was undone, and what was done again.

const BOOT_UNDONE = STEPS.filter((s) => s.undoneByBoot).map((s) => s.name);

/** The node's boot now, for what this process records (unknown when it cannot be read: nothing is then done again). */
export async function readBoot(ctx: RunContext): Promise<void> {
  ctx.boot.now = await bootIdentity(ctx.reader).catch(() => undefined);
}

/**
 * The steps a resume does again, said once: those a boot the run did not ask undid, or, on the same boot, all it
 * did after stopping kubelet when kubelet runs again (started by hand?): the journal's word is not taken over the node's.
 */
export async function stepsUndone(ctx: RunContext, report: RunReport): Promise<string[]> {
  const { journal, options } = ctx;
  const byBoot = undoneByBoot(journal, BOOT_UNDONE, ctx.boot.now);
  if (byBoot.length > 0) {
    const before = journal.steps[byBoot[0]!]!.boot!;
    report.undone = { why: 'boot', before, after: ctx.boot.now!, redone: byBoot };
    ctx.progress(`${options.node} booted since it was worked on (boot ${shortBoot(before)} -> ${shortBoot(ctx.boot.now!)}), not by this run: systemd starts kubelet at boot, which sets up sandboxes; done again before the runtime is touched: ${byBoot.join(', ')}`);
    return byBoot;
  }
  if (journal.reboot?.asked || journal.steps['start-kubelet'] || journal.steps['stop-kubelet']?.status !== 'done' || (await kubeletRun(ctx)) === 'stopped') return [];
  const redo = BOOT_UNDONE.filter((n) => journal.steps[n]?.status === 'done');
  report.undone = undoneAgain(report.undone, ctx.boot.now, redo);
  ctx.progress(`kubelet runs on ${options.node} again though this run stopped it (${report.undone.why === 'boot' ? 'the boot\'s start of it came back' : 'started by hand?'}): done again before the runtime is touched: ${redo.join(', ')}`);
  return redo;
}

/**
 * The report's word once kubelet runs again after the run stopped it: on a boot this process already said undid the
 * run's steps, the boot is still why (its start of kubelet came back under a retried step); else kubelet is.
 */
export function undoneAgain(said: RunReport['undone'], bootNow: string | undefined, redo: string[]): NonNullable<RunReport['undone']> {
  if (said?.why === 'boot' && bootNow !== undefined && said.after === bootNow) return { ...said, redone: [...new Set([...said.redone, ...redo])] };
  return { why: 'kubelet', redone: redo };
}

/** Before a rollback reinstalls: the kubelet a boot started again stopped, and what it set up torn down by CNI DEL. */
export async function stopWhatABootStarted(ctx: RunContext, report: RunReport, emit: EventSink): Promise<void> {
  await readBoot(ctx);
  if (undoneByBoot(ctx.journal, ['stop-kubelet'], ctx.boot.now).length === 0 || (await kubeletRun(ctx)) === 'stopped') return;
  const summary = `${ctx.options.node} booted since the run stopped kubelet, not by this run: ${await stopKubeletForRollback(ctx)}`;
  report.rollback.push({ step: 'boot', status: 'done', summary });
  emit({ type: 'rollback', phase: 'done', step: 'boot', summary });
}

/**
 * After a rollback: kubelet as it was before the run (the observed prior state), whoever stopped it since (an earlier
 * rollback's retry after an operator stopped it by hand, as that rollback's words told them to).
 */
export async function kubeletAsBefore(ctx: RunContext, report: RunReport, emit: EventSink): Promise<void> {
  if (!ctx.journal.prior?.kubeletActive || (await kubeletActive(ctx))) return;
  const summary = `kubelet started again, as it ran before the run: ${await startKubeletAndWait(ctx)}`;
  report.rollback.push({ step: 'stop-kubelet', status: 'done', summary });
  emit({ type: 'rollback', phase: 'done', step: 'stop-kubelet', summary });
}
