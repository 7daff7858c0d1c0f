import { constants } from 'node:os';
import { expectedShutdown, StopSource } from '../stop.js';

// How an operator stops a run from a terminal, a CI job or a service manager: the first SIGINT, SIGTERM or SIGHUP asks
// the run to stop at its next safe point (its report says where and what the node is like); a second one ends the
// process at once, the journal on the Lease still valid (each entry is written before the change it names).
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface StopOnSignals {
  signal: AbortSignal;
  /** Takes the handlers away again. */
  dispose(): void;
}

export function stopOnSignals(say: (line: string) => void, exit: (code: number) => void = (code) => process.exit(code), parentPid = startedByNpm() ? process.ppid : undefined): StopOnSignals {
  const stop = new StopSource();
  // A closed terminal (SIGHUP) leaves stderr without a reader: what cannot be said is dropped, never retried.
  const dropWriteErrors = () => undefined;
  process.stdout.on('error', dropWriteErrors);
  process.stderr.on('error', dropWriteErrors);
  let hurried = false;
  const handler = (name: NodeJS.Signals) => {
    if (!stop.signal.aborted) {
      const shutdown = name === 'SIGTERM' ? expectedShutdown() : undefined;
      say(`node-maint: ${name} received: ${shutdown ?? 'stopping at the next safe point (no new change starts; a command already running on the node gets a few seconds to finish there); send it again to end at once'}`);
      stop.ask(name);
      return;
    }
    // Another signal than the first is an escalation with a SIGKILL close behind (a CI runner's cancel: SIGINT, SIGTERM
    // 7.5 s later, SIGKILL 2.5 s after): the stop is finished now (its record written, the Lease released), not dropped.
    if (!hurried && name !== stop.signal.reason) {
      hurried = true;
      say(`node-maint: ${name} received after ${String(stop.signal.reason)}: finishing the stop now (the command under way is left running on the node; the stop is recorded and the Lease released); send it again to end at once`);
      stop.hurry();
      return;
    }
    say(`node-maint: ${name} received again: ending now. The journal on the node's Lease is intact; the Lease frees itself within its duration (at once for a run from this machine): run the same command to continue, or add --rollback`);
    exit(128 + (constants.signals[name] ?? 0));
  };
  for (const s of SIGNALS) process.on(s, handler);
  const orphaned =
    parentPid === undefined
      ? undefined
      : watchParent(parentPid, (parent) => {
          if (stop.signal.aborted) return;
          say(`node-maint: its parent process (PID ${parent}) ended without passing a signal on (npx and npm end at a SIGTERM and leave their child running): stopping at the next safe point, as for SIGTERM`);
          stop.ask('the end of its parent process');
        });
  return {
    signal: stop.signal,
    dispose() {
      // The write-error handlers stay: a report written after a SIGHUP must not crash the process that wrote it.
      for (const s of SIGNALS) process.off(s, handler);
      clearInterval(orphaned);
    },
  };
}

/** Started through npm (npx, npm exec, npm run): npm says so in the environment it gives its children. A run started
 *  otherwise (nohup, setsid, systemd-run) may outlive its parent on purpose, and is not watched. */
const startedByNpm = () => process.env.npm_execpath !== undefined;

/**
 * Calls `gone` once the process that started this one has ended (this one is then a child of PID 1 or of a
 * subreaper): `npx zx ...` runs npm, which runs sh, which runs node, and a SIGTERM to the npx a user or a service
 * manager knows ends npm at once without passing the signal on. Looked at each second; never keeps the process alive.
 */
function watchParent(parent: number, gone: (parent: number) => void): NodeJS.Timeout {
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    gone(parent);
  }, 1_000);
  timer.unref();
  return timer;
}
