import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from '../cluster/api.js';
import { getNode, podCidr } from '../cluster/nodes.js';
import { listPodsOnNode } from '../cluster/pods.js';
import type { Pod } from '../cluster/types.js';
import { readNodeState } from '../node/state/index.js';
import type { NodeState } from '../node/state/types.js';
import type { Transport } from '../node/transport/types.js';
import { auditNode } from './audit.js';
import { detectCalicoLeaks, readCalicoView } from './calico/index.js';
import type { CalicoView } from './calico/types.js';
import type { AuditReport, IpamScope } from './types.js';
import { readWhereaboutsView } from './whereabouts/read.js';
import { whereaboutsRanges } from './whereabouts/ranges.js';
import type { WhereaboutsView } from './whereabouts/types.js';

export interface LiveAuditInput {
  cluster: Cluster;
  transport: Transport;
  node: string;
  /** A state already read in this round trip, to save one. */
  state?: NodeState;
  /** The run's --skip-wait-for-delete-timeout (the audit's stuck-Terminating check honours it). */
  skipWaitForDeleteTimeoutSeconds?: number;
  /** An operator's stop: a settling audit gives up between its reads. */
  signal?: AbortSignal;
  /** 'cluster' also reads the cluster's whole IPAM and every pod, for what no one node owns (audit-node --cluster-wide). */
  ipamScope?: IpamScope;
}

type Read<T> = { value: T; error?: undefined } | { value?: undefined; error: string };
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * Reads the node (one round trip) and the cluster, then runs the pure audit. The node and its state must be read;
 * a pod list, Calico or whereabouts read that fails makes the audit unverifiable (reported, never taken for "nothing there").
 */
export async function auditLiveNode(input: LiveAuditInput): Promise<{ report: AuditReport; state: NodeState; podCidr?: string }> {
  const [state, node, pods, calico] = await Promise.all([
    input.state ?? readNodeState(input.transport),
    getNode(input.cluster, input.node),
    listPodsOnNode(input.cluster, input.node).then(
      (items): Read<Pod[]> => ({ value: items }),
      (e: unknown): Read<Pod[]> => ({ error: messageOf(e) }),
    ),
    readCalicoView(input.cluster, input.node, input.ipamScope).then(
      (view): Read<CalicoView | undefined> => ({ value: view }),
      (e: unknown): Read<CalicoView | undefined> => ({ error: messageOf(e) }),
    ),
  ]);
  // whereabouts' pools after the node's state, which says which ranges its networks use (most nodes: none).
  const whereabouts = await readWhereaboutsView(input.cluster, whereaboutsRanges(state), input.ipamScope).then(
    (view): Read<WhereaboutsView | undefined> => ({ value: view }),
    (e: unknown): Read<WhereaboutsView | undefined> => ({ error: messageOf(e) }),
  );
  const cidr = podCidr(node);
  const report = auditNode({
    node: input.node,
    state,
    pods: pods.value,
    podListError: pods.error,
    podCidr: cidr,
    podCidrs: node.spec.podCIDRs ?? [],
    skipWaitForDeleteTimeoutSeconds: input.skipWaitForDeleteTimeoutSeconds,
    // Judged with the node's routing table: an address its blocks lend is reachable only past their blackhole.
    calico: calico.value && detectCalicoLeaks(calico.value, input.node, state.routes),
    whereabouts: whereabouts.value,
    ipamScope: input.ipamScope,
    unverifiable: [
      ...(calico.error === undefined ? [] : [`Calico's IPAM could not be read (${calico.error}): its leaks and conflicts were not checked`]),
      ...(whereabouts.error === undefined ? [] : [`whereabouts' IPPools could not be read (${whereabouts.error}): its allocations were not checked`]),
    ],
  });
  return { report, state, podCidr: cidr };
}

/**
 * The live audit, read again every few seconds until it is clean or the retries are spent (then the last read counts):
 * a live kubelet may be between creating a sandbox and writing its checkpoint, or recreating DaemonSet sandboxes.
 */
export async function settledLiveAudit(input: LiveAuditInput, retries = 10, intervalMs = 3_000): Promise<AuditReport> {
  let { report } = await auditLiveNode(input);
  for (let i = 0; i < retries && report.verdict !== 'clean'; i++) {
    await sleep(intervalMs, undefined, { signal: input.signal });
    ({ report } = await auditLiveNode({ ...input, state: undefined }));
  }
  return report;
}

export { auditNode } from './audit.js';
export * from './types.js';
