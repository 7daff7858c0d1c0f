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

// The one process-wide fact of a stop: the run on the node itself (the agent's) has asked that node's reboot, so the
// SIGTERM systemd sends as it shuts down is that reboot, not an operator's stop. Why, as the run says it; or nothing.
let shutdownExpected: string | undefined;

/** Said (or taken back) by the reboot step of a run on the node it reboots. */
export function expectShutdown(why: string | undefined): void {
  shutdownExpected = why;
}

export const expectedShutdown = () => shutdownExpected;

/** Throws the stop at a safe point: before a change starts. */
export function throwIfStopped(signal: AbortSignal): void {
  if (signal.aborted) throw stoppedError(signal);
}

/**
 * The one way a stop is made: `signal` is what every wait, loop and retry is given; `hurry()` says the process has
 * seconds left (a second signal, the provider host closing it with SIGKILL 5 s behind), so that no command under way
 * is waited for any more and a stop reads nothing it need not. Each stop hurries on its own: nothing process-wide.
 */
export class StopSource {
  private readonly asked = new AbortController();
  private readonly hurried = new AbortController();
  readonly signal: AbortSignal = this.asked.signal;

  constructor() {
    hurries.set(this.signal, this.hurried.signal);
  }

  /** Asks the run to stop at its next safe point; the reason says who asked ("SIGINT"). Asked once: later asks change nothing. */
  ask(reason: string): void {
    if (!this.signal.aborted) this.asked.abort(reason);
  }

  hurry(): void {
    this.hurried.abort();
  }
}

// A stop's signal to its hurry, so that the layers given only the signal can tell.
const hurries = new WeakMap<AbortSignal, AbortSignal>();

/** Whether the process that made this stop has seconds left (never, for a signal not made by a StopSource). */
export const mustHurry = (signal: AbortSignal) => hurries.get(signal)?.aborted === true;

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
    const giveUp = () => (mustHurry(signal) ? now() : (timer ??= setTimeout(() => leave(`after ${graceMs / 1000}s`), graceMs)));
    const hurried = hurries.get(signal);
    if (signal.aborted) giveUp();
    else signal.addEventListener('abort', giveUp, { once: true });
    hurried?.addEventListener('abort', now, { once: true });
    work.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener('abort', giveUp);
      hurried?.removeEventListener('abort', now);
    });
  });
}
