import { describeCommands, parseRunningCommands, runningCommandsScript, type RunningCommand } from '../node/commands.js';
import { run } from '../node/transport/index.js';
import { waitForAskedReboot } from '../steps/reboot.js';
import { waitUntil } from '../wait.js';
import type { RunContext } from './step.js';

// A run that continues a stopped or killed one (the same command again, or its --rollback) first waits for what that
// run's earlier process left under way, rather than fight it: the reboot it asked, then its commands still running on
// the node. Only then does it read the node and plan.

export async function waitForEarlierProcess(ctx: RunContext): Promise<void> {
  await waitForAskedReboot(ctx);
  await waitForEarlierCommands(ctx);
}

/** The run's commands still running on the node (a stopped or killed process of it left them there), and the node's clock. */
export async function runningCommands(ctx: RunContext): Promise<{ now: number; commands: RunningCommand[] }> {
  const out = await run(ctx.reader, `date +%s; ${runningCommandsScript(ctx.journal.runId)}`);
  const [first = '', ...rest] = out.split('\n');
  return { now: Number(first.trim()), commands: parseRunningCommands(rest.join('\n')) };
}

/**
 * Waits for the commands an earlier process of this run left running on the node (an apt goes on to its end after a
 * stop or a kill), up to their own timeouts, saying so; then the run plans from what the node is.
 */
async function waitForEarlierCommands(ctx: RunContext): Promise<void> {
  const first = await runningCommands(ctx);
  if (first.commands.length === 0) return;
  const lastDeadline = Math.max(...first.commands.map((c) => c.deadline));
  ctx.progress(`waiting for this run's command(s) still running on the node from its earlier process: ${describeCommands(first.commands)}`);
  await waitUntil(
    `the earlier process's command(s) on ${ctx.options.node} to end`,
    async () => {
      const { commands } = await runningCommands(ctx);
      return commands.length === 0 ? true : describeCommands(commands);
    },
    // Their own timeouts end them (node's clock); a little longer, for the clocks' and the polls' sake.
    { timeoutMs: (Math.max(0, lastDeadline - first.now) + 30) * 1000, intervalMs: 2_000, signal: ctx.stop },
  );
  ctx.progress('the earlier command(s) ended: planning from what the node is now');
}

