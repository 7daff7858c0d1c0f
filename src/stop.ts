import { RunbookError } from './errors.js';

// An operator's stop (Ctrl-C, SIGTERM, a closed session, a cancelled `pulumi up`) as an AbortSignal: no new change
// starts, waits give up, a command already on the node gets a short grace to finish there, and the run ends at its
// next safe point with its journal and its Lease in order. The signal's reason says who asked ("SIGINT"). It sits
// beside errors.ts and wait.ts, below every layer that is given it (cluster/, node/, runbook/, fleet/, cli/).

/** How long a command already running on the node is waited for after a stop, before the run leaves it running there. */
export const STOP_GRACE_MS = 15_000;

/** Never aborted: a run nobody can stop (tests, the dry run's callers). */
export const NEVER_STOPPED: AbortSignal = new AbortController().signal;

export const stopReason = (signal: AbortSignal) => String(signal.reason ?? 'a stop');

export function stoppedError(signal: AbortSignal, detail = 'no further change was started'): RunbookError {
  return new RunbookError('stopped', `stopped by ${stopReason(signal)}: ${detail}`);
}

/** Throws the stop at a safe point: before a change starts. */
export function throwIfStopped(signal: AbortSignal): void {
  if (signal.aborted) throw stoppedError(signal);
}

/** Aborted when the process is about to be killed (the provider host being closed, 5 s before its SIGKILL). */
const hurry = new AbortController();

/** No command under way is waited for any more, and a stop reads nothing it need not: the process has seconds left. */
export function stopNow(): void {
  hurry.abort();
}

export const mustHurry = () => hurry.signal.aborted;

/**
 * The command's answer, or, once a stop was asked and the command has had its grace (none once the process must
 * hurry), a `stopped` error that says it goes on on the node (its own timeout ends it there).
 */
export function withinStopGrace<T>(work: Promise<T>, signal: AbortSignal, what: string, graceMs = STOP_GRACE_MS): Promise<T> {
  if (signal === NEVER_STOPPED) return work;
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const leave = (after: string) => reject(stoppedError(signal, `${what} was still running ${after} and goes on on the node until it ends (its own timeout bounds it)`));
    const now = () => signal.aborted && leave('as the process had to end');
    const giveUp = () => (mustHurry() ? now() : (timer ??= setTimeout(() => leave(`after ${graceMs / 1000}s`), graceMs)));
    if (signal.aborted) giveUp();
    else signal.addEventListener('abort', giveUp, { once: true });
    hurry.signal.addEventListener('abort', now, { once: true });
    work.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener('abort', giveUp);
      hurry.signal.removeEventListener('abort', now);
    });
  });
}
