import pRetry from 'p-retry';

// Notifications for people: a JSON message to a webhook (Slack-compatible: its `text` is the message) at the fleet's
// start, at each node's end and at the fleet's end. A webhook that cannot be reached is said in the log; it never
// stops or fails maintenance.
export type FleetEvent = 'fleet-started' | 'node-finished' | 'node-failed' | 'node-skipped' | 'node-held' | 'fleet-finished';

export interface FleetMessage {
  text: string;
  event: FleetEvent;
  /** "project/stack" of the fleet. */
  fleet: string;
  node?: string;
  result?: string;
  [key: string]: unknown;
}

const pairs = (v: Record<string, string>) => Object.entries(v).map(([p, x]) => `${p} ${x}`).join(', ');

export function fleetStarted(fleet: string, { changing, targets, waves }: { changing: string[]; targets: Record<string, string>; waves: string[][] }): FleetMessage {
  return {
    event: 'fleet-started',
    fleet,
    text: `node-maint ${fleet}: started: ${changing.length} node(s) to ${pairs(targets)} (${changing.join(', ')}); waves: ${waves.map((w) => w.join(' + ')).join(', then ')}`,
    nodes: changing,
    targets,
    waves,
  };
}

export interface NodeOutcome {
  node: string;
  result: string;
  exitCode?: number;
  runId?: string;
  versionsBefore?: Record<string, string>;
  versionsAfter?: Record<string, string>;
  durationMs?: number;
  error?: string;
}

export function nodeEnded(fleet: string, o: NodeOutcome): FleetMessage {
  const event: FleetEvent = o.result === 'skipped-undrainable' ? 'node-skipped' : o.result === 'not-started' ? 'node-held' : o.error !== undefined ? 'node-failed' : 'node-finished';
  const took = o.durationMs !== undefined ? ` in ${Math.round(o.durationMs / 1000)}s` : '';
  const what =
    event === 'node-finished'
      ? `${o.result}${o.versionsBefore && o.versionsAfter ? ` (${pairs(o.versionsBefore)} -> ${pairs(o.versionsAfter)})` : ''}${took}`
      : event === 'node-skipped'
        ? `skipped as undrainable, left as it was: ${o.error ?? ''}`
        : event === 'node-held'
          ? `${o.error}`
          : `${o.result}${o.exitCode !== undefined ? ` (exit ${o.exitCode})` : ''}: ${o.error}; the fleet stops after this wave`;
  return { event, fleet, text: `node-maint ${fleet}: ${o.node}: ${what}`, ...o };
}

export function fleetFinished(fleet: string, results: Record<string, string>, skipped: Record<string, string>): FleetMessage {
  const counts = new Map<string, number>();
  for (const r of Object.values(results)) counts.set(r, (counts.get(r) ?? 0) + 1);
  const summary = [...counts].map(([r, n]) => `${n} ${r}`).join(', ');
  const skips = Object.keys(skipped).length > 0 ? `; skipped: ${Object.entries(skipped).map(([n, why]) => `${n} (${why})`).join('; ')}` : '';
  return { event: 'fleet-finished', fleet, text: `node-maint ${fleet}: finished: ${summary || 'no node'}${skips}`, results, skipped };
}

/** Posts the message; says in the log when the webhook did not take it (after 3 tries), and never throws. */
export async function postMessage(url: string | undefined, message: FleetMessage, log: (line: string) => void): Promise<void> {
  if (!url) return;
  try {
    await pRetry(
      async () => {
        const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(message), signal: AbortSignal.timeout(10_000) });
        await res.body?.cancel();
        if (!res.ok) throw new Error(`answered ${res.status}`);
      },
      { retries: 2, minTimeout: 1_000 },
    );
  } catch (e) {
    log(`could not notify the webhook at ${new URL(url).origin} of ${message.event}${message.node ? ` (${message.node})` : ''}: ${(e as Error).message}`);
  }
}
