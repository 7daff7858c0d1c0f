import { Cluster } from '../cluster/api.js';
import type { DrainOptions } from '../cluster/drain/filters.js';
import { readNodeState } from '../node/state/index.js';
import { openTransport, type Transport, type TransportSpec } from '../node/transport/index.js';
import { DEFAULT_RUN_OPTIONS } from '../runbook/options.js';
import type { RunReport } from '../runbook/report.js';
import { runUpgrade } from '../runbook/runner.js';
import { progressPrinter } from '../runbook/progress.js';
import { NodeMarker } from '../runbook/node-marker.js';
import type { UndrainableBehavior } from './undrainable.js';
import type { MaintenanceWindow } from './window.js';

export { fleetHolds } from './hold.js';
export { SKIPPED_RESULT, undrainableReason } from './undrainable.js';

// What the Pulumi provider calls, loaded inside its methods: whether a node may start, one node's upgrade, and a
// read-only look at its versions.
export type NodeConnection =
  | { kind: 'ssh'; host: string; port: number; user: string; knownHosts: string; bastion?: string }
  | { kind: 'docker-exec'; container: string; dockerHost?: string };

export interface NodeUpgradeInputs {
  node: string;
  connection: NodeConnection;
  kubeconfig?: string;
  context?: string;
  targets: Record<string, string>;
  drain: DrainOptions;
  leaseNamespace: string;
  allowControlPlane?: boolean;
  /** Checked before the node starts (with the pause ConfigMap in leaseNamespace); not part of the node's diff. */
  maintenanceWindow?: MaintenanceWindow;
  /** What an undrainable node does to the fleet: stop it (the default), or be passed by. */
  undrainable?: UndrainableBehavior;
}

function transportSpec(connection: NodeConnection, sshKey: string | undefined): TransportSpec {
  if (connection.kind === 'docker-exec') return connection;
  const [host = '', port] = (connection.bastion ?? '').split(':');
  return {
    kind: 'ssh',
    host: connection.host,
    port: connection.port,
    user: connection.user,
    knownHostsPath: connection.knownHosts,
    privateKey: sshKey,
    bastion: connection.bastion ? { host, port: port ? Number(port) : 22 } : undefined,
  };
}

async function withTransport<T>(connection: NodeConnection, sshKey: string | undefined, fn: (t: Transport) => Promise<T>): Promise<T> {
  const transport = await openTransport(transportSpec(connection, sshKey));
  try {
    return await fn(transport);
  } finally {
    await transport.close();
  }
}

export async function upgradeFleetNode(inputs: NodeUpgradeInputs, sshKey: string | undefined, log: (line: string) => void): Promise<RunReport> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  return withTransport(inputs.connection, sshKey, (transport) =>
    runUpgrade({
      options: { ...DEFAULT_RUN_OPTIONS, node: inputs.node, targets: inputs.targets, drain: inputs.drain, leaseNamespace: inputs.leaseNamespace, allowControlPlane: inputs.allowControlPlane === true },
      cluster,
      transport,
      events: progressPrinter((line) => log(`[${inputs.node}] ${line}`)),
    }),
  );
}

/** The node passed by, as it was: the state label says skipped, an annotation and a Warning Event say why. */
export async function markSkipped(inputs: NodeUpgradeInputs, runId: string, reason: string, log: (line: string) => void): Promise<void> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  await new NodeMarker(cluster, inputs.node, runId, (line) => log(`[${inputs.node}] ${line}`)).skipped(reason);
}

/** The installed versions of the target packages, read-only. */
export async function observeVersions(connection: NodeConnection, sshKey: string | undefined, packages: string[]): Promise<Record<string, string>> {
  return withTransport(connection, sshKey, async (transport) => {
    const state = await readNodeState(transport);
    return Object.fromEntries(packages.map((p) => [p, state.packages[p] ?? 'not installed']));
  });
}
