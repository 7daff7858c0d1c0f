import { quote } from './transport/quote.js';

// A run's commands that change the node leave a record on it while they run (under /run, so a reboot forgets them):
// a stopped or killed run's apt goes on there to its end, and the run that resumes it must wait for it rather than
// fight it (a second apt on the dpkg lock, a rollback downgrading under an install).
export const COMMANDS_DIR = '/run/node-maint/commands';

/** How long after its timeout a command may still be there: `timeout -k 10` kills what its TERM left. */
const KILL_GRACE_SECONDS = 10;

export interface RunningCommand {
  pid: number;
  /** When its own timeout has ended it at the latest (seconds since the epoch, the node's clock). */
  deadline: number;
  what: string;
}

/** The script's first line, for people: what the record says the command is. */
const describe = (script: string) => (script.split('\n').find((l) => l.trim() !== '') ?? '').trim().slice(0, 100);

/**
 * The script, recorded while it runs: its shell's PID and start time, its deadline, what it is. The record goes when the
 * shell exits; one left by a shell killed by a signal names a process that is gone, which readers skip.
 */
export function recordedScript(runId: string, script: string, timeoutMs: number, what = describe(script)): string {
  const file = `${COMMANDS_DIR}/${runId}.$$`;
  const seconds = Math.ceil(timeoutMs / 1000) + KILL_GRACE_SECONDS;
  return [
    `mkdir -p ${COMMANDS_DIR} && printf '%s %s %s %s\\n' "$$" "$(sed 's/^.*) //' /proc/$$/stat | cut -d' ' -f20)" "$(( $(date +%s) + ${seconds} ))" ${quote(what.replace(/\s+/g, ' '))} > "${file}" 2>/dev/null`,
    `trap 'rm -f "${file}"' EXIT`,
    script,
  ].join('\n');
}

/** Prints "PID DEADLINE WHAT" for each command of the run still running on the node; removes the records of the others. */
export function runningCommandsScript(runId: string): string {
  return `for f in ${COMMANDS_DIR}/${quote(runId)}.*; do
  [ -f "$f" ] || continue
  read -r pid start deadline what < "$f" || continue
  if [ "$(sed 's/^.*) //' /proc/"$pid"/stat 2>/dev/null | cut -d' ' -f20)" = "$start" ]; then printf '%s %s %s\\n' "$pid" "$deadline" "$what"; else rm -f "$f"; fi
done; true`;
}

export function parseRunningCommands(text: string): RunningCommand[] {
  return text.split('\n').flatMap((line) => {
    const m = /^(\d+) (\d+) ?(.*)$/.exec(line.trim());
    return m ? [{ pid: Number(m[1]), deadline: Number(m[2]), what: m[3]! }] : [];
  });
}

export const describeCommands = (commands: RunningCommand[]) =>
  commands.map((c) => `PID ${c.pid} (${c.what || '?'}; its timeout ends it by ${new Date(c.deadline * 1000).toISOString()})`).join(', ');
