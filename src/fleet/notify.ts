import pRetry from 'p-retry';

// Notifications for people: a JSON message to a webhook (Slack-compatible: its `text` is the message) at the fleet's
// start, at each node's end and at the fleet's end. A webhook that cannot be reached is said in the log; it never
// stops or fails maintenance.
export type FleetEvent = 'fleet-started' | 'node-finished' | 'node-failed' | 'node-skipped' | 'node-held' | 'fleet-finished' | 'fleet-failed';

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

export function fleetStarted(fleet: string, { changing, targets, waves, what }: { changing: string[]; targets: Record<string, string>; waves: string[][]; what?: string }): FleetMessage {
  return {
    event: 'fleet-started',
    fleet,
    text: `node-maint ${fleet}: started: ${changing.length} node(s) to ${pairs(targets) || what || 'be rebooted'} (${changing.join(', ')}); waves: ${waves.map((w) => w.join(' + ')).join(', then ')}`,
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

/** A reason without the node's name in front: errors thrown for Pulumi name their node, the message names it once. */
export function withoutNode(node: string, reason: string): string {
  return reason.startsWith(`${node}: `) ? reason.slice(node.length + 2) : reason;
}

/** "a: rolled-back (exit 11): why" (the error a failed node throws, and its message's text); "not-started" reads "not started". */
export function nodeFailure(o: NodeOutcome): string {
  const exit = o.exitCode !== undefined ? ` (exit ${o.exitCode})` : '';
  return `${o.node}: ${o.result === 'not-started' ? 'not started' : o.result}${exit}: ${withoutNode(o.node, o.error ?? 'no reason given')}`;
}

/** " (a 1 -> a 2)"; nothing for a run that changed no package (a reboot alone). */
const changedVersions = ({ versionsBefore: before, versionsAfter: after }: NodeOutcome) =>
  before && after && (Object.keys(before).length > 0 || Object.keys(after).length > 0) ? ` (${pairs(before)} -> ${pairs(after)})` : '';

export function nodeEnded(fleet: string, o: NodeOutcome): FleetMessage {
  const event: FleetEvent = o.result === 'skipped-undrainable' ? 'node-skipped' : o.result === 'not-started' || o.result === 'held' ? 'node-held' : o.error !== undefined ? 'node-failed' : 'node-finished';
  const took = o.durationMs !== undefined ? ` in ${Math.round(o.durationMs / 1000)}s` : '';
  const what =
    event === 'node-finished'
      ? `${o.node}: ${o.result}${changedVersions(o)}${took}`
      : event === 'node-skipped'
        ? `${o.node}: skipped as undrainable, left as it was: ${o.error ?? ''}`
        : o.result === 'held'
          ? `${o.node}: held, not started: ${o.error ?? ''}`
          : event === 'node-held'
            ? nodeFailure(o)
            : `${nodeFailure(o)}; the fleet stops after this wave`;
  return { event, fleet, text: `node-maint ${fleet}: ${what}`, ...o, ...(o.error !== undefined ? { error: withoutNode(o.node, o.error) } : {}) };
}

/** What became of one node in this `pulumi up`: its result, or why it failed, or that it never started. */
export interface NodeEnd {
  result: string;
  error?: string;
  exitCode?: number;
  /** Why a node was passed by (skipped as undrainable) or held (the window, the pause). */
  reason?: string;
}

/** Nodes of later waves, which never start once a wave failed: some names (all of a small fleet) and how many. */
export interface LaterNodes {
  names: string[];
  count: number;
}

/** The fleet's end: every node's fate; "fleet-failed" when a node failed or the later waves never started, with why. */
export function fleetEnded(fleet: string, ends: Record<string, NodeEnd>, skipped: Record<string, string>, later: LaterNodes = { names: [], count: 0 }, held: Record<string, string> = {}): FleetMessage {
  const counts = new Map<string, number>();
  for (const e of Object.values(ends)) counts.set(e.result, (counts.get(e.result) ?? 0) + 1);
  if (later.count > 0) counts.set('not-started', (counts.get('not-started') ?? 0) + later.count);
  const summary = [...counts].map(([r, n]) => `${n} ${r}`).join(', ');
  const listed = (word: string, nodes: Record<string, string>) => (Object.keys(nodes).length > 0 ? `; ${word}: ${Object.entries(nodes).map(([n, why]) => `${n} (${why})`).join('; ')}` : '');
  const skips = `${listed('skipped', skipped)}${listed('held, the next `pulumi up` does them', held)}`;
  const failed = Object.entries(ends).filter(([, e]) => e.error !== undefined);
  const results = { ...Object.fromEntries(Object.entries(ends).map(([n, e]) => [n, e.result])), ...Object.fromEntries(later.names.map((n) => [n, 'not-started'])) };
  if (failed.length === 0 && later.count === 0) return { event: 'fleet-finished', fleet, text: `node-maint ${fleet}: finished: ${summary || 'no node'}${skips}`, results, skipped, held };
  const more = later.count > later.names.length ? ` and ${later.count - later.names.length} more` : '';
  const why = [...failed.map(([node, e]) => nodeFailure({ node, ...e })), ...(later.count > 0 ? [`not started, the fleet stopped: ${later.names.join(', ')}${more}`] : [])].join('; ');
  return { event: 'fleet-failed', fleet, text: `node-maint ${fleet}: failed: ${summary}${skips}; ${why}`, results, skipped, errors: Object.fromEntries(failed.map(([n, e]) => [n, withoutNode(n, e.error!)])), notStarted: later.count };
}

/** A fleet refused before any node: nodes whose versions could not be read (the program plans nothing then). */
export function fleetNotObserved(fleet: string, unread: string[], total: number): FleetMessage {
  return { event: 'fleet-failed', fleet, text: `node-maint ${fleet}: failed before any node changed: cannot observe ${unread.length} of ${total} node(s): ${unread.join('; ')}`, unobserved: unread };
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
