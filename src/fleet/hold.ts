import { Cluster } from '../cluster/api.js';
import { pauseHold, readPause } from './pause.js';
import { windowHold, type MaintenanceWindow } from './window.js';

// What the provider asks before each node starts: a node already running finishes, the next ones wait.
export interface HoldInputs {
  kubeconfig?: string;
  context?: string;
  /** Where the pause ConfigMap is looked for (beside the runbook's Leases). */
  leaseNamespace: string;
  maintenanceWindow?: MaintenanceWindow;
}

/** Why no node may start at `now` (outside the window, paused); empty when one may. */
export async function holdsAt({ cluster, leaseNamespace, maintenanceWindow, now }: { cluster: Cluster; leaseNamespace: string; maintenanceWindow?: MaintenanceWindow; now: Date }): Promise<string[]> {
  const outside = maintenanceWindow && windowHold(maintenanceWindow, now);
  const paused = pauseHold(leaseNamespace, await readPause(cluster, leaseNamespace));
  return [outside, paused].filter((h): h is string => h !== undefined);
}

/** holdsAt, on a connection of its own: the provider's process has none. */
export async function fleetHolds(inputs: HoldInputs, now: Date): Promise<string[]> {
  const cluster = await Cluster.connect({ kubeconfig: inputs.kubeconfig, context: inputs.context });
  return holdsAt({ cluster, leaseNamespace: inputs.leaseNamespace, maintenanceWindow: inputs.maintenanceWindow, now });
}
