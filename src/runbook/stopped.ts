import { getNode } from '../cluster/nodes.js';
import { ExitCode, messageOf } from '../errors.js';
import { describeCommands } from '../node/commands.js';
import { parseUnitRuns, unitRunsScript } from '../node/units.js';
import { run } from '../node/transport/index.js';
import { runningCommands } from './resume.js';
import { kubeletUnitOf, runtimeUnitsOf } from './journal.js';
import type { NodeNow, RunReport } from './report.js';
import type { RunContext } from './step.js';
import { mustHurry, stopReason } from '../stop.js';

// A run the operator stopped ends here: its journal says where, its Lease is released by the runner as always, and
// the report says what the node is like now and both ways on (runbook/resume.ts is how the next process goes on).

/** How long a stop reads what the node is like: with the 15 s grace of a command under way, a stop ends within 30 s. */
export const NODE_NOW_READ_MS = 10_000;

/** What the node is like as the run stops: what an operator weighs before continuing or rolling back. */
export async function readNodeNow(ctx: RunContext): Promise<NodeNow> {
  const reboot = ctx.journal.reboot;
  if (reboot && !reboot.after) {
    // Asked, not seen done: the node may still answer for a moment on its old boot; its units then say nothing true.
    const cordoned = await getNode(ctx.recordingCluster, ctx.options.node).then((n) => n.spec.unschedulable === true, () => undefined);
    return { running: [], cordoned, rebooting: `the reboot this run asked at ${reboot.at}, not yet seen on a new boot`, unread: 'kubelet, the runtime and the packages not read while it reboots' };
  }
  const now: NodeNow = { running: [] };
  const problems: string[] = [];
  const answered = new Set<string>();
  const prior = ctx.journal.prior;
  const read = (what: string, work: () => Promise<void>) =>
    work().then(
      () => void answered.add(what),
      (e) => void (answered.add(what), problems.push(`${what} (${messageOf(e)})`)),
    );
  const reads: Record<string, () => Promise<void>> = {
    'the Node': async () => void (now.cordoned = (await getNode(ctx.recordingCluster, ctx.options.node)).spec.unschedulable === true),
    'the units': async () => {
      const kubelet = kubeletUnitOf(ctx.journal);
      const units = prior ? runtimeUnitsOf(prior) : [];
      const runs = parseUnitRuns(await run(ctx.reader, unitRunsScript([kubelet, ...units])));
      now.kubelet = runs.get(kubelet) ?? 'unknown';
      now.runtime = Object.fromEntries(units.map((u) => [u, runs.get(u) ?? 'unknown']));
    },
    'the packages': async () => void (now.packages = await ctx.installedVersions(Object.keys(ctx.journal.targets))),
    "the run's commands": async () => void (now.running = (await runningCommands(ctx)).commands.map((c) => describeCommands([c]))),
  };
  // Read side by side, for NODE_NOW_READ_MS at most: a node that stopped answering does not hold the stop up.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(Object.entries(reads).map(([what, work]) => read(what, work))), new Promise((r) => (timer = setTimeout(r, NODE_NOW_READ_MS)))]);
  clearTimeout(timer);
  for (const what of Object.keys(reads)) if (!answered.has(what)) problems.push(`${what} (no answer within ${NODE_NOW_READ_MS / 1000}s)`);
  if (problems.length > 0) now.unread = `could not read ${problems.join(', ')}`;
  return now;
}

/**
 * The operator stopped the run: nothing is rolled back (the operator chooses), the journal says where it stopped and
 * keeps the run unfinished, so the same command continues it and --rollback undoes it, from any machine.
 */
export async function settleStopped(ctx: RunContext, report: RunReport, error: unknown, phase: 'run' | 'rollback'): Promise<void> {
  const { journal, options } = ctx;
  const stoppedIn = report.steps.find((s) => s.status === 'stopped')?.name;
  const step = phase === 'rollback' ? 'the rollback' : (stoppedIn ?? `before ${report.steps.find((s) => s.status === 'not-run')?.name ?? 'the end'}`);
  report.result = 'stopped';
  report.exitCode = ExitCode.stopped;
  report.error = { code: 'stopped', message: messageOf(error) };
  journal.error = report.error.message;
  journal.stopped = { at: new Date().toISOString(), by: stopReason(ctx.stop), step };
  const acted = Object.values(journal.steps).some((r) => r && r.status !== 'nothing-to-do');
  if (!acted && phase === 'run') {
    // Stopped before it changed anything: there is nothing to continue or undo.
    journal.status = 'failed';
    report.next = `nothing was changed on ${options.node}; run the same command to start again`;
    return;
  }
  // A process with seconds left (its plugin host closing it) writes its journal and frees the Lease first; the node's
  // state is for the run that continues it.
  report.nodeNow = mustHurry(ctx.stop) ? { running: [], unread: 'not read: this process was being ended' } : await readNodeNow(ctx);
  const again = 'run the same command again to continue where it stopped';
  report.next =
    phase === 'rollback'
      ? `the rollback was stopped: ${again} (it finishes the rollback)`
      : journal.pointOfNoReturn
        ? `the run had passed its point of no return (the node was uncordoned): ${again}; nothing is rolled back`
        : `${again} (${stoppedIn ? `from ${step}` : step}), or run it with --rollback to undo what the run did`;
}
