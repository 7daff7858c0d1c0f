import { Cluster } from '../cluster/api.js';
import { readLease } from '../cluster/lease.js';
import { describeUnfinished, journalOf, rebootInFlight } from '../runbook/journal.js';
import type { DrainOptions } from '../cluster/drain/filters.js';
import { withTransport } from './connection.js';
import { upgradeThroughAgent } from './through-agent.js';
import { NEVER_STOPPED } from '../stop.js';
import { DEFAULT_RUN_OPTIONS } from '../runbook/options.js';
import type { RunReport } from '../runbook/report.js';
import { runUpgrade } from '../runbook/runner.js';
import { progressPrinter } from '../runbook/progress.js';
import { NodeMarker } from '../runbook/node-marker.js';
import type { Hooks } from '../runbook/hooks.js';
import { publishRunMetrics } from '../metrics/textfile.js';
import { DEFAULT_GATES, type Gates } from './config/operations.js';
import { observeBefore, waitForNoAlerts, waitUntilBack, type NodeBefore } from './gates/index.js';
import { nodeEnded, postMessage, type NodeOutcome } from './notify.js';
import type { UndrainableBehavior } from './undrainable.js';
import type { MaintenanceWindow } from './window.js';
import type { FleetConfig } from './config/index.js';
import { hasWaitingTaint, setWaitingTaint } from './waiting-taint.js';
import { listAll } from '../cluster/list.js';
import type { Node } from '../cluster/types.js';
import { waitForNoBlockingPods, type BlockingPods } from './blocking-pods.js';

export { fleetHolds } from './hold.js';

// What a node of the fleet does (node-provider.ts calls it in the provider's process): whether it may start, its
// gates, its upgrade, its marks and notifications; and the program's read-only look at its versions.
export type NodeConnection =
  | { kind: 'ssh'; host: string; port: number; user: string; knownHosts: string; bastion?: string }
  | { kind: 'docker-exec'; container: string; dockerHost?: string }
  | { kind: 'agent' };

export interface NodeUpgradeInputs {
  node: string;
  connection: NodeConnection;
  kubeconfig?: string;
  context?: string;
  targets: Record<string, string>;
  /** The fleet takes each node's pending upgrades: `targets` are this node's, read as it was planned (maybe none). */
  pendingUpgrades?: { origin?: string };
  /** This `pulumi up` tainted its waiting nodes PreferNoSchedule (preferNoScheduleWhileWaiting): each loses it as its
   * run ends, all of them when the fleet fails (found by the taint, not listed: a list on every node grew the fleet's
   * plan with the square of its size). */
  waitingTaint?: boolean;
  /** kured's blocking pod selector: the node is held while one runs there (or anywhere). */
  blockingPods?: BlockingPods;
  /** The fleet's reboot key; absent in states written before it: never. */
  reboot?: FleetConfig['reboot'];
  drain: DrainOptions;
  leaseNamespace: string;
  allowControlPlane?: boolean;
  allowNoRollback?: boolean;
  /** Checked before the node starts (with the pause ConfigMap in leaseNamespace); not part of the node's diff. */
  maintenanceWindow?: MaintenanceWindow;
  /** What an undrainable node does to the fleet: stop it (the default), or be passed by. */
  undrainable?: UndrainableBehavior;
  /** Checked around the node: alerts before it starts; it and its workloads back after it. */
  gates?: Gates;
  /** The soak after this node is back (0 in the last wave: no wave waits for it). */
  soakSeconds?: number;
  hooks?: Hooks;
  /** The hooks were set with --secret: the runbook never shows their commands. */
  hooksSecret?: boolean;
  /** node-exporter's textfile directory on the node, for the run's and the audit's metrics. */
  textfileDir?: string;
  /** "project/stack", for notifications. */
  fleet?: string;
  /** The runbook runs as this ServiceAccount, with a token the stack's credentials ask for, valid `seconds`. */
  runAs?: { namespace: string; name: string; seconds: number };
}

/** The runbook's reboot options from the fleet's reboot key. */
const rebootOptions = (reboot: NodeUpgradeInputs['reboot']) =>
  reboot
    ? { reboot: reboot.policy, rebootTimeoutSeconds: reboot.timeoutSeconds, ...(reboot.sentinelCommand ? { rebootSentinelCommand: reboot.sentinelCommand } : {}), ...(reboot.command ? { rebootCommand: reboot.command } : {}) }
    : {};

/** Resolves once no blocking pod holds the node (immediately without a selector); rejects, naming them, past the wait. */
export async function waitForBlockingPods(inputs: NodeUpgradeInputs, log: (line: string) => void, signal?: AbortSignal): Promise<void> {
  if (!inputs.blockingPods) return;
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  await waitForNoBlockingPods(cluster, inputs.node, inputs.blockingPods, log, signal);
}

/** Takes the fleet's waiting taint off the node itself, or off every node that carries it (a node gone is no error). */
export async function clearWaitingTaints(inputs: NodeUpgradeInputs, which: 'own' | 'fleet'): Promise<void> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  const fleet = inputs.fleet ?? 'fleet';
  const nodes = which === 'own' ? [inputs.node] : (await listAll<Node>(cluster, '/api/v1/nodes')).filter((n) => hasWaitingTaint(n, fleet)).map((n) => n.metadata.name);
  await Promise.all(nodes.map((n) => setWaitingTaint(cluster, n, fleet, false)));
}

export async function upgradeFleetNode(inputs: NodeUpgradeInputs, sshKey: string | undefined, log: (line: string) => void, stop?: AbortSignal): Promise<RunReport> {
  const stack = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  // Through the agent the run acts as the agent's node-maint; the stack's credentials only ask for it.
  if (inputs.connection.kind === 'agent') return upgradeThroughAgent(stack, inputs, log, stop ?? NEVER_STOPPED);
  const { runAs } = inputs;
  const cluster = runAs ? await stack.asServiceAccount(runAs.namespace, runAs.name, runAs.seconds) : stack;
  if (runAs) log(`[${inputs.node}] the runbook runs as the ServiceAccount ${runAs.namespace}/${runAs.name}`);
  return withTransport(inputs.connection, sshKey, (transport) =>
    runUpgrade({
      options: { ...DEFAULT_RUN_OPTIONS, ...rebootOptions(inputs.reboot), node: inputs.node, targets: inputs.targets, drain: inputs.drain, leaseNamespace: inputs.leaseNamespace, allowControlPlane: inputs.allowControlPlane === true, allowNoRollback: inputs.allowNoRollback === true, hooks: inputs.hooks ?? {}, hooksSecret: inputs.hooksSecret === true },
      cluster,
      transport,
      events: progressPrinter((line) => log(`[${inputs.node}] ${line}`)),
      stop,
    }).then(async (report) => {
      if (inputs.textfileDir) await publishRunMetrics({ cluster, transport, report, dir: inputs.textfileDir, log: (line) => log(`[${inputs.node}] ${line}`), stop });
      return report;
    }),
    // A node silent while its unfinished run's reboot is under way (an up cancelled then) is waited for by the run.
    async () => rebootInFlight(journalOf(await readLease(cluster, inputs.leaseNamespace, inputs.node))),
  );
}

/** Before the node starts: waits while a matching alert fires (up to its bound), then records what "back" means. */
export async function beforeFleetNode(inputs: NodeUpgradeInputs, log: (line: string) => void, options: { alerts: boolean; maintaining?: string[]; signal?: AbortSignal } = { alerts: true }): Promise<NodeBefore> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  const gates = inputs.gates ?? DEFAULT_GATES;
  if (options.alerts) await waitForNoAlerts({ cluster, node: inputs.node, gates, log, maintaining: options.maintaining, signal: options.signal });
  return observeBefore(cluster, inputs.node);
}

/** "run R (running)" when the node's Lease carries a run that neither finished nor finished rolling back, else undefined. */
export async function unfinishedRun(inputs: NodeUpgradeInputs): Promise<string | undefined> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  return describeUnfinished(journalOf(await readLease(cluster, inputs.leaseNamespace, inputs.node)));
}

/** After the node's run: it and its workloads back, then the soak; throws (the fleet stops) when time is up. */
export async function afterFleetNode(inputs: NodeUpgradeInputs, before: NodeBefore, log: (line: string) => void, signal?: AbortSignal): Promise<void> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  await waitUntilBack({ cluster, node: inputs.node, gates: inputs.gates ?? DEFAULT_GATES, log, signal }, before, inputs.soakSeconds ?? 0);
}

/** The node's end, to the webhook (if any); never throws. */
export async function notifyNodeEnd(webhook: string | undefined, inputs: NodeUpgradeInputs, outcome: NodeOutcome, log: (line: string) => void): Promise<void> {
  await postMessage(webhook, nodeEnded(inputs.fleet ?? 'fleet', outcome), (line) => log(`[${inputs.node}] ${line}`));
}

/** The node passed by, as it was: the state label says skipped, an annotation and a Warning Event say why. */
export async function markSkipped(inputs: NodeUpgradeInputs, runId: string | undefined, reason: string, log: (line: string) => void): Promise<void> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  // Passed by before any run (a blocking pod): the Events' reporting instance is the fleet.
  await new NodeMarker(cluster, inputs.node, runId ?? inputs.fleet ?? 'fleet', (line) => log(`[${inputs.node}] ${line}`)).skipped(reason);
}
