import type { Cluster } from '../cluster/api.js';
import { messageOf } from '../errors.js';
import { publishFacts, type NodeFacts } from './facts.js';
import * as realHost from './host.js';

// The agent's part of an uninstall (npm run agent:uninstall sets its DaemonSet's args to --uninstall): what it staged
// on its node goes (its runtime, its runs' output and credentials), never while a run's unit is there, and it says
// which in its node's facts; it then waits to be removed (exiting would have kubelet start it, and its host folders
// made, again). The runs' backups (/var/lib/node-maint/backups) are not the agent's, and stay.

type Host = Pick<typeof realHost, 'removeFromHost' | 'runUnits' | 'unitState'>;

/** What the uninstall did on this node, in words: "uninstalled: ..." or "refused: ...". */
export async function uninstallFromNode(host: Host = realHost, dirs = [realHost.HOST_DIR, realHost.HOST_SECRETS_DIR]): Promise<string> {
  const units = await host.runUnits();
  const running = [];
  for (const u of units) if ((await host.unitState(u)).running) running.push(u);
  if (running.length > 0) return `refused: a run is under way (${running.join(', ')}): its unit needs the staged runtime; stop it, or let it end, then uninstall again`;
  // On the host, where they are no mount (in this pod they are): kubelet removes nothing of a hostPath.
  await host.removeFromHost(dirs);
  return `uninstalled: ${dirs.join(' and ')} removed${units.length > 0 ? ` (and the ended units ${units.join(', ')})` : ''}`;
}

/**
 * Never settles, and holds the process: a bare pending promise empties the event loop, Node exits (13), kubelet starts
 * the container again, and the runtime makes the host folders of its mounts again, which the uninstall just removed.
 */
export function waitToBeRemoved(): Promise<never> {
  return new Promise<never>(() => setInterval(() => undefined, 2 ** 31 - 1));
}

/** How often a refused uninstall is tried again (a run under way ends; the uninstaller, run again, reads the news). */
const RETRY_MS = 30_000;

/** Says the outcome in the node's facts (what the uninstaller waits for), tried again while refused; then waits to be removed. */
export async function uninstallMain(cluster: Cluster, node: string, log: (line: string) => void): Promise<never> {
  for (;;) {
    const outcome = await uninstallFromNode().catch((e: unknown) => `refused: ${messageOf(e)}`);
    log(outcome);
    const facts: NodeFacts = { node, at: new Date().toISOString(), installed: {}, offered: {}, uninstall: outcome };
    await publishFacts(cluster, facts).catch((e: unknown) => log(`could not say so in the node's facts: ${messageOf(e)}`));
    if (outcome.startsWith('uninstalled')) return waitToBeRemoved();
    await new Promise((r) => setTimeout(r, RETRY_MS));
  }
}
