import { constants } from 'node:os';

// How an operator stops a run from a terminal, a CI job or a service manager: the first SIGINT, SIGTERM or SIGHUP asks
// the run to stop at its next safe point (its report says where and what the node is like); a second one ends the
// process at once, the journal on the Lease still valid (each entry is written before the change it names).
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface StopOnSignals {
  signal: AbortSignal;
  /** Takes the handlers away again. */
  dispose(): void;
}

export function stopOnSignals(say: (line: string) => void, exit: (code: number) => void = (code) => process.exit(code)): StopOnSignals {
  const controller = new AbortController();
  // A closed terminal (SIGHUP) leaves stderr without a reader: what cannot be said is dropped, never retried.
  const dropWriteErrors = () => undefined;
  process.stdout.on('error', dropWriteErrors);
  process.stderr.on('error', dropWriteErrors);
  const handler = (name: NodeJS.Signals) => {
    if (!controller.signal.aborted) {
      say(`node-maint: ${name} received: stopping at the next safe point (no new change starts; a command already running on the node gets a few seconds to finish there); send it again to end at once`);
      controller.abort(name);
      return;
    }
    say(`node-maint: ${name} received again: ending now. The journal on the node's Lease is intact; the Lease frees itself within its duration (at once for a run from this machine): run the same command to continue, or add --rollback`);
    exit(128 + (constants.signals[name] ?? 0));
  };
  for (const s of SIGNALS) process.on(s, handler);
  return {
    signal: controller.signal,
    dispose() {
      // The write-error handlers stay: a report written after a SIGHUP must not crash the process that wrote it.
      for (const s of SIGNALS) process.off(s, handler);
    },
  };
}
