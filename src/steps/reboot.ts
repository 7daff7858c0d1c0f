import { RunbookError } from '../errors.js';
import { bootAfterRebootCommand, bootIdentity, RebootCommandFailed, rebootOutcomeFile, rebootRequired, rebootScript, shortBoot } from '../node/reboot.js';
import { run } from '../node/transport/index.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';
import { stopKubeletForRollback } from './kubelet.js';
import { waitUntil } from '../wait.js';
import { expectShutdown, expectedShutdown, stoppedError } from '../stop.js';

/** What a run on the node itself (the agent's) says of the shutdown its own reboot brings. */
const OWN_SHUTDOWN = 'the node is shutting down for the reboot this run asked: the run goes on from its journal when its agent starts it again on the new boot';

/** Why this run reboots the node, or undefined: --reboot always; --reboot-if-required when the node says so. */
export async function rebootReason(ctx: RunContext): Promise<string | undefined> {
  const { options } = ctx;
  if (options.reboot === 'never') return undefined;
  if (options.reboot === 'always') return 'asked (--reboot)';
  return rebootRequired(ctx.reader, options.rebootSentinelCommand);
}

const notRequired = (ctx: RunContext) =>
  ctx.options.reboot === 'never' ? 'no reboot asked' : `no reboot required (${ctx.options.rebootSentinelCommand ? `the sentinel command did not exit 0: ${ctx.options.rebootSentinelCommand}` : '/var/run/reboot-required is not there'})`;

/** How the run sees the node back, in the words of the way it reaches it. */
function comingBack(target: string): string {
  if (target.startsWith('ssh ')) return 'SSH with the same host key';
  if (target === 'local') return 'where this run, ended by the shutdown, goes on from its journal once started again (the agent does so at boot)';
  return `${target} answering again`;
}

/**
 * Reboots the node after its sandboxes are torn down, its state cleared and its runtime upgraded, then waits for a new
 * boot: the boot identity is written to the journal before the reboot is asked, so a run killed or stopped on either
 * side of it resumes on the right one. SSH must come back with the same host key (the transport checks it).
 */
export const rebootNode: Step<StepPlan> = {
  name: 'reboot-node',
  title: 'Reboot the node',
  undo: 'once the node is back from the reboot it asked: stop the kubelet systemd started at boot and tear down what it set up (a reboot cannot be undone)',
  async plan(ctx) {
    const done = ctx.journal.reboot;
    if (done?.after) return { actions: [], summary: `rebooted earlier in this run (boot ${shortBoot(done.before)} -> ${shortBoot(done.after)})` };
    if (done) return { actions: [`wait up to ${ctx.options.rebootTimeoutSeconds}s for ${ctx.options.node} to come back from the reboot this run asked`], summary: 'resuming the reboot' };
    const reason = await rebootReason(ctx);
    if (!reason) return { actions: [], summary: notRequired(ctx) };
    return {
      actions: [`reboot ${ctx.options.node} (${ctx.options.rebootCommand}): ${reason}`, `wait up to ${ctx.options.rebootTimeoutSeconds}s for a new boot, ${comingBack(ctx.transport.target)}`],
      summary: `will reboot: ${reason}`,
      detail: { reason },
    };
  },
  async apply(ctx) {
    const t0 = Date.now();
    // The same command that did not reboot the node last time would not now either: said at once, not waited out again.
    const notTaken = ctx.journal.rebootNotTaken;
    if (notTaken && !ctx.journal.reboot && notTaken.command === ctx.options.rebootCommand) {
      throw new RunbookError(
        'rebootTimeout',
        `${ctx.options.node} did not reboot when this run asked it at ${notTaken.at} (\`${notTaken.command}\` exited 0, and the node answered on the same boot for all of --reboot-timeout): not asked again with the same command; give a --reboot-command that reboots it, or run the same command with --rollback`,
      );
    }
    // A resume reads the node's boot again: on a new one already, the reboot is not asked again.
    const now = ctx.journal.reboot ? await bootIdentity(ctx.reader).catch(() => undefined) : await bootIdentity(ctx.reader);
    if (!ctx.journal.reboot) {
      ctx.journal.reboot = { before: now!, at: new Date().toISOString() };
      await ctx.saveJournal();
    }
    const { before } = ctx.journal.reboot;
    // On the node itself, the shutdown ends this process: its SIGTERM is the reboot asked, said so, never "stopped".
    const local = ctx.transport.target === 'local';
    if (local) expectShutdown(OWN_SHUTDOWN);
    const after = await (async () => {
      if (now === before) {
        ctx.progress(`rebooting ${ctx.options.node}: ${ctx.options.rebootCommand}`);
        await run(ctx.transport, rebootScript(ctx.options.rebootCommand, rebootOutcomeFile(ctx.runId)), { what: 'reboot' });
        ctx.journal.reboot!.asked = new Date().toISOString();
        ctx.journal.reboot!.command = ctx.options.rebootCommand;
        await ctx.saveJournal();
      }
      return waitForNewBoot(ctx, before);
    })().catch(async (e) => {
      // The command failed and the node answers on the boot it had: not rebooted, and rolled back as before a reboot.
      if (e instanceof RebootCommandFailed) await notRebooted(ctx);
      if (local && ctx.stop.aborted && ctx.stop.reason === 'SIGTERM' && expectedShutdown()) throw stoppedError(ctx.stop, OWN_SHUTDOWN);
      throw e;
    }).finally(() => local && expectShutdown(undefined));
    ctx.journal.reboot.after = after;
    // From when the reboot was asked, by whichever process of the run asked it: a resume's own wait may be 0 s. A run on
    // the node itself (the agent's) ends with the shutdown before it can record `asked`: its entry, written just
    // before, says when.
    const since = Date.parse(ctx.journal.reboot.asked ?? ctx.journal.reboot.at) || t0;
    return `rebooted in ${Math.round((Date.now() - since) / 1000)}s (boot ${shortBoot(before)} -> ${shortBoot(after)})`;
  },
  async verify(ctx) {
    if (!ctx.journal.reboot?.after) throw new RunbookError('internal', 'the reboot was not seen');
  },
  async rollback(ctx) {
    if (!ctx.journal.reboot) return undefined;
    await waitForAskedReboot(ctx);
    if (!ctx.journal.reboot) return `${ctx.options.node} was not rebooted (its reboot command failed)`;
    const rebooted = `${ctx.options.node} was rebooted: a reboot cannot be undone`;
    // Systemd started kubelet at boot, and it set up the pods it still has (DaemonSets): stopped and torn down before
    // the runtime's rollback, unless start-kubelet's own rollback has just done so.
    if (ctx.journal.steps['start-kubelet'] || !ctx.journal.steps['stop-kubelet']) return rebooted;
    return `${rebooted}; started by systemd at boot, ${await stopKubeletForRollback(ctx)}`;
  },
};

/**
 * A reboot the node took and no process has seen done yet (the run stopped or killed in its wait): waited for before
 * anything reads the node (a resume, a rollback's next undo). The step itself records the new boot when it runs. A
 * reboot whose wait saw the node up on its old boot to the end is not waited for again: if the node still answers on
 * that boot, it never rebooted (the run goes on, or rolls back, as before a reboot).
 */
export async function waitForAskedReboot(ctx: RunContext): Promise<void> {
  const reboot = ctx.journal.reboot;
  if (!reboot?.asked || reboot.after) return;
  if (reboot.neverWentDown && (await bootIdentity(ctx.reader).catch(() => undefined)) === reboot.before) {
    ctx.progress(`${ctx.options.node} still answers on the boot it had when this run asked its reboot at ${reboot.asked}: it never rebooted`);
    ctx.journal.rebootNotTaken = { command: reboot.command ?? ctx.options.rebootCommand, at: reboot.asked };
    await notRebooted(ctx);
    return;
  }
  try {
    await waitForNewBoot(ctx, reboot.before);
  } catch (e) {
    if (!(e instanceof RebootCommandFailed)) throw e;
    ctx.progress(`${e.message}; ${ctx.options.node} was not rebooted`);
    await notRebooted(ctx);
  }
}

/** The journal forgets a reboot the node never took: nothing waits for it, a resume asks it again. */
async function notRebooted(ctx: RunContext): Promise<void> {
  delete ctx.journal.reboot;
  await ctx.saveJournal();
}

/** How long logins refused after a reboot are taken for boot's /run/nologin rather than a changed key or user. */
const LOGIN_REFUSED_GRACE_MS = 60_000;

/**
 * Polls the node until it answers on a new boot; another host key fails at once, logins refused for longer than
 * LOGIN_REFUSED_GRACE_MS too; silence is waited out.
 */
async function waitForNewBoot(ctx: RunContext, before: string): Promise<string> {
  let after = '';
  let wentDown = false;
  let refusedSince: number | undefined;
  const started = Date.now();
  ctx.progress(`waiting up to ${ctx.options.rebootTimeoutSeconds}s for ${ctx.options.node} to come back on a new boot`);
  try {
    await waitUntil(
      `${ctx.options.node} to come back from its reboot`,
      async () => {
        try {
          after = await bootAfterRebootCommand(ctx.reader, before, rebootOutcomeFile(ctx.runId), ctx.options.rebootCommand);
        } catch (e) {
          if (e instanceof RebootCommandFailed || (e instanceof RunbookError && e.code === 'hostKey')) throw e;
          wentDown = true;
          if (e instanceof RunbookError && e.code === 'authentication') {
            // While a node shuts down or boots, systemd's /run/nologin makes pam_nologin refuse every login but root's.
            refusedSince ??= Date.now();
            if (Date.now() - refusedSince > LOGIN_REFUSED_GRACE_MS) throw new RunbookError('authentication', `${e.message}, for ${LOGIN_REFUSED_GRACE_MS / 1000}s after its reboot (longer than /run/nologin holds logins at boot: a changed key or user?)`, { cause: e });
            return 'logins refused (/run/nologin while it boots?)';
          }
          refusedSince = undefined;
          return `down (${Math.round((Date.now() - started) / 1000)}s)`;
        }
        return after === before ? 'not rebooted yet' : true;
      },
      { timeoutMs: ctx.options.rebootTimeoutSeconds * 1000, intervalMs: 2_000, onChange: (seen) => (seen.startsWith('down') ? undefined : ctx.progress(seen)), signal: ctx.stop },
    );
  } catch (e) {
    if (e instanceof RunbookError || e instanceof RebootCommandFailed) throw e;
    // Up on its old boot all along: the next process can tell at once whether it ever rebooted.
    if (!wentDown && ctx.journal.reboot) {
      ctx.journal.reboot.neverWentDown = new Date().toISOString();
      await ctx.saveJournal();
    }
    throw new RunbookError(
      'rebootTimeout',
      `${ctx.options.node} did not come back within --reboot-timeout ${ctx.options.rebootTimeoutSeconds}s of its reboot (${wentDown ? 'it went down and has not answered since' : 'it never went down: the reboot command did not reboot it'}): it stays cordoned; once it is back, run the same command again to finish`,
    );
  }
  return after;
}
