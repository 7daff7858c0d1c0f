import type { Cluster } from '../cluster/api.js';
import { RunbookError } from '../errors.js';
import { patchNodeSpec } from '../cluster/nodes.js';
import type { Node } from '../cluster/types.js';

// kured's idea: while a fleet runs, the nodes waiting for their turn carry a PreferNoSchedule taint, so pods evicted
// from the node being drained go, where they can, to nodes that will not be drained next. The value names the fleet;
// each node's taint goes when its own run ends, every node's when the fleet fails.
export const WAITING_TAINT_KEY = 'node-maint.io/waiting';
const EFFECT = 'PreferNoSchedule';

/** The fleet ("project/stack") as a taint value: a label value, so '/' and the like become '.', at most 63 characters. */
export const waitingTaintValue = (fleet: string) => fleet.replace(/[^A-Za-z0-9_.-]/g, '.').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '') || 'fleet';

const isOurs = (fleet: string) => (t: { key: string; value?: string; effect: string }) => t.key === WAITING_TAINT_KEY && t.value === waitingTaintValue(fleet) && t.effect === EFFECT;

/** Whether the node carries this fleet's waiting taint. */
export const hasWaitingTaint = (node: Node, fleet: string) => (node.spec.taints ?? []).some(isOurs(fleet));

/** Adds (true) or removes (false) the fleet's waiting taint (patchNodeSpec: spec.taints, conditional); a node gone is no error. */
export async function setWaitingTaint(cluster: Cluster, name: string, fleet: string, on: boolean): Promise<void> {
  await patchNodeSpec(cluster, name, (node) => {
    if (hasWaitingTaint(node, fleet) === on) return undefined;
    const taints = node.spec.taints ?? [];
    return { taints: on ? [...taints, { key: WAITING_TAINT_KEY, value: waitingTaintValue(fleet), effect: EFFECT }] : taints.filter((t) => !isOurs(fleet)(t)) };
  }).catch((e: unknown) => {
    if (!(e instanceof RunbookError && e.code === 'nodeNotFound')) throw e;
  });
}
