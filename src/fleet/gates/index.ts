import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from '../../cluster/api.js';
import { getNode, isReady, readyMessage } from '../../cluster/nodes.js';
import { waitUntil } from '../../wait.js';
import type { Gates } from '../config/operations.js';
import { describeAlerts, fetchAlerts, holdingAlerts, splitByMaintained } from './alerts.js';
import { notBack, readWorkloads, targetsOf, workloadName, workloadsOnNode, type WorkloadStatus } from './workloads.js';

// The gates around each node of a fleet: before it starts, no firing alert holds it; after it is done, it is Ready
// and schedulable again, every workload that had pods on it is back, and its wave has soaked. A gate that cannot look
// (Prometheus or the API not answering) holds, and stops the fleet when its time is up: never "all clear" unseen.

/** What the node and its workloads were before the run: what "back" is measured against. */
export interface NodeBefore {
  schedulable: boolean;
  workloads: WorkloadStatus[];
}

export interface GateContext {
  cluster: Cluster;
  node: string;
  gates: Gates;
  log: (line: string) => void;
  /** The other nodes this fleet is maintaining now: alerts about them do not hold this one. */
  maintaining?: string[];
  /** How often the gates look again. */
  pollMs?: number;
  /** A cancelled `pulumi up`: the gates give up at once. */
  signal?: AbortSignal;
}

export class GateError extends Error {
  override name = 'GateError';
}

/** Waits while a matching alert fires, up to the hold timeout; then the fleet stops before this node. */
export async function waitForNoAlerts({ node, gates, log, pollMs = 5_000, maintaining = [], signal }: GateContext): Promise<void> {
  const gate = gates.alerts;
  if (!gate) return;
  let said = '';
  const check = async (): Promise<true | string> => {
    try {
      const { holding, excused } = splitByMaintained(holdingAlerts(gate, await fetchAlerts(gate.prometheus)), maintaining);
      const about = describeAlerts(excused);
      if (about && about !== said) log(`[${node}] not held by alert(s) about nodes this fleet is maintaining: ${(said = about)}`);
      return holding.length === 0 ? true : `held by firing alert(s): ${describeAlerts(holding)}`;
    } catch (e) {
      return `${(e as Error).message}: held until it answers`;
    }
  };
  try {
    await waitUntil(`no firing alert before ${node} starts`, check, { timeoutMs: gate.holdTimeoutSeconds * 1000, intervalMs: pollMs, onChange: (seen) => log(`[${node}] ${seen}`), signal });
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new GateError(`the fleet stops here: ${(e as Error).message} (gates.alerts.holdTimeout ${gate.holdTimeoutSeconds}s)`);
  }
}

export async function observeBefore(cluster: Cluster, node: string): Promise<NodeBefore> {
  const [n, workloads] = await Promise.all([getNode(cluster, node), workloadsOnNode(cluster, node)]);
  return { schedulable: n.spec.unschedulable !== true, workloads };
}

/** After the node's run: Ready, schedulable if it was, its workloads back; then the soak. Throws GateError when time is up. */
export async function waitUntilBack({ cluster, node, gates, log, pollMs = 2_000, signal }: GateContext, before: NodeBefore, soakSeconds: number): Promise<void> {
  const deadline = Date.now() + gates.workloadsTimeoutSeconds * 1000;
  const onChange = (seen: string) => log(`[${node}] waiting: ${seen}`);
  const remaining = () => Math.max(1_000, deadline - Date.now());
  try {
    await waitUntil(
      `${node} Ready${before.schedulable ? ' and schedulable' : ''}`,
      async () => {
        const n = await getNode(cluster, node);
        if (!isReady(n)) return `${node} not Ready (${readyMessage(n)})`;
        return before.schedulable && n.spec.unschedulable ? `${node} still cordoned` : true;
      },
      { timeoutMs: remaining(), intervalMs: pollMs, onChange, signal },
    );
    const targets = targetsOf(before.workloads);
    await waitUntil(`the workloads that had pods on ${node} to be back`, async () => notBack(targets, await readWorkloads(cluster, targets)).join('; ') || true, { timeoutMs: remaining(), intervalMs: pollMs, onChange, signal });
    log(`[${node}] back: Ready${before.schedulable ? ', schedulable' : ''}, ${targets.length === 0 ? 'no workload had pods on it' : `${targets.map(workloadName).join(', ')} available again`}`);
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new GateError(`upgraded, but the fleet stops here: ${(e as Error).message} (gates.workloadsTimeout ${gates.workloadsTimeoutSeconds}s)`);
  }
  if (soakSeconds > 0) {
    log(`[${node}] soaking ${soakSeconds}s before the next wave`);
    await sleep(soakSeconds * 1000, undefined, { signal });
  }
}
