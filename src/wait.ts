import pRetry, { AbortError } from 'p-retry';
import { stoppedError } from './stop.js';

/** Not yet: the condition is still false; its message says what was seen. */
class NotYet extends Error {}

/** The wait ran out of time: its message says what it waited for and what it saw last. */
export class WaitTimedOut extends Error {}

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Called when what is seen changes, for progress lines. */
  onChange?: (seen: string) => void;
  /** An operator's stop: the wait gives up at once with a `stopped` error. */
  signal?: AbortSignal;
}

/**
 * Polls until `check` returns true, through p-retry: a string return means "not yet" and says what was seen; a
 * thrown error ends the wait at once, and so does a stop. Times out with the last thing seen.
 */
export async function waitUntil(what: string, check: () => Promise<true | string>, options: WaitOptions): Promise<void> {
  let last = '';
  try {
    await pRetry(
      async () => {
        let result: true | string;
        try {
          result = await check();
        } catch (e) {
          throw new AbortError(e as Error);
        }
        if (result === true) return;
        if (result !== last) options.onChange?.(result);
        last = result;
        throw new NotYet(result);
      },
      { retries: Number.POSITIVE_INFINITY, factor: 1, minTimeout: options.intervalMs ?? 1_000, maxRetryTime: options.timeoutMs, shouldRetry: ({ error }) => error instanceof NotYet, signal: options.signal },
    );
  } catch (e) {
    if (options.signal?.aborted) throw stoppedError(options.signal, `it gave up waiting for ${what}`);
    if (e instanceof NotYet) throw new WaitTimedOut(`timed out after ${Math.round(options.timeoutMs / 1000)}s waiting for ${what}${last ? `: ${last}` : ''}`);
    throw e;
  }
}
