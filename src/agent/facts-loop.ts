import type { Cluster } from '../cluster/api.js';
import { messageOf } from '../errors.js';
import { factsKey, FACTS_REFRESH_MS, publishFacts, type NodeFacts } from './facts.js';

/** How often an agent reads its node's facts on the host (no API request unless they changed). */
export const FACTS_READ_MS = 5 * 60_000;

/**
 * The node's facts read every `readEveryMs`, written when they changed or `refreshMs` after the last write (over the
 * version last written: no read first); `now()` reads and writes at once (a run just ended). Never returns.
 */
export function factsLoop(cluster: Cluster, read: () => Promise<NodeFacts>, log: (line: string) => void, { readEveryMs = FACTS_READ_MS, refreshMs = FACTS_REFRESH_MS } = {}): { now: () => void } {
  let last = { key: '', at: 0, version: undefined as string | undefined };
  let wake = () => undefined as void;
  void (async () => {
    for (;;) {
      try {
        const facts = await read();
        if (factsKey(facts) !== last.key || Date.now() - last.at >= refreshMs) {
          last = { key: factsKey(facts), at: Date.now(), version: await publishFacts(cluster, facts, last.version) };
        }
      } catch (e) {
        log(`could not publish the node's facts: ${messageOf(e)}`);
      }
      await new Promise<void>((r) => {
        const timer = setTimeout(r, readEveryMs);
        wake = () => (clearTimeout(timer), r());
      });
    }
  })();
  return { now: () => wake() };
}
