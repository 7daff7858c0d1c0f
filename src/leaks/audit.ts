import type { Pod } from '../cluster/types.js';
import type { NodeState } from '../node/state/types.js';
import type { CalicoFindings } from './calico/types.js';
import { detectCacheLeaks } from './detect/cache.js';
import { detectIpamLeaks } from './detect/ipam.js';
import { detectNetnsLeaks } from './detect/netns.js';
import { detectCheckpointLeaks, detectSandboxAccumulation, detectStuckTerminating, excusedTerminating } from './detect/sandboxes.js';
import { leftAloneLine } from '../node/cni/owners.js';
import { inSetupLine, liveness } from './liveness.js';
import { detectWhereaboutsLeaks } from './whereabouts/detect.js';
import type { WhereaboutsView } from './whereabouts/types.js';
import { auditVerdict, type AuditReport, type IpamScope } from './types.js';

export interface AuditInput {
  node: string;
  state: NodeState;
  /** Pods bound to the node, from the API; undefined when the list could not be read. */
  pods: Pod[] | undefined;
  /** Why the pod list could not be read. */
  podListError?: string;
  /** The node's PodCIDR; podCidrs holds both of a dual-stack node (either will do, both are merged). */
  podCidr?: string;
  podCidrs?: string[];
  /** Calico IPAM findings (they need no node state), this node's apart from the cluster's. */
  calico?: CalicoFindings;
  /** whereabouts' allocations of the node's ranges; undefined when the node has no whereabouts network. */
  whereabouts?: WhereaboutsView;
  /** The run's --skip-wait-for-delete-timeout: pods deleted longer ago, of which the runtime holds nothing, are not stuck. */
  skipWaitForDeleteTimeoutSeconds?: number;
  /** What the caller could not read, with why (e.g. Calico's IPAM). */
  unverifiable?: string[];
  /** How much of the cluster's IPAM was read ('node' unless said). */
  ipamScope?: IpamScope;
  nowMs?: number;
}

/** The leak audit: pure, over one node state and one cluster view. The runbook's verify step is this. */
export function auditNode(input: AuditInput): AuditReport {
  const { state, pods } = input;
  const podCidrs = [...new Set([...(input.podCidrs ?? []), ...(input.podCidr ? [input.podCidr] : [])])];
  const live = liveness(state, pods);
  const nowMs = input.nowMs ?? state.now * 1000;
  const excused = excusedTerminating(state, pods ?? [], nowMs, input.skipWaitForDeleteTimeoutSeconds ?? 0);
  const ipam = detectIpamLeaks(state, live, podCidrs);
  const cache = detectCacheLeaks(state, live);
  const inSetup = inSetupLine(live, [...ipam.inSetup, ...cache.inSetup]);
  const whereabouts = input.whereabouts ? detectWhereaboutsLeaks(input.whereabouts, live, pods) : { node: [], cluster: [], cannotTell: [] };
  const findings = [
    ...ipam.findings,
    ...cache.findings,
    ...detectCheckpointLeaks(state),
    ...detectSandboxAccumulation(state),
    ...detectStuckTerminating(state, pods ?? [], nowMs, excused),
    ...detectNetnsLeaks(state),
    ...(input.calico?.node ?? []),
    ...whereabouts.node,
  ];
  const unverifiable = [
    ...(state.runtimeReachable ? [] : ['the container runtime did not answer: sandboxes and containers unknown, so no reservation, cache entry, checkpoint, sandbox or network namespace was judged']),
    ...(pods ? [] : [`the pod list could not be read${input.podListError ? ` (${input.podListError})` : ''}: no pod IP, terminating pod or reservation claimed by a pod was judged`]),
    ...ipam.unverifiable,
    ...inSetup,
    ...(input.calico?.unverifiable ?? []),
    ...(input.unverifiable ?? []),
  ];
  return {
    node: input.node,
    takenAt: state.now,
    verdict: auditVerdict(findings, unverifiable),
    unverifiable,
    ...(inSetup.length > 0 ? { inSetup } : {}),
    findings,
    clusterFindings: [...(input.calico?.cluster ?? []), ...whereabouts.cluster],
    ipamScope: input.ipamScope ?? 'node',
    ...((input.ipamScope ?? 'node') === 'node' && (input.calico || input.whereabouts)
      ? { notRead: `the cluster-wide IPAM (Calico affinities of removed nodes, handles that hold no IP${input.whereabouts ? ', whereabouts allocations of pods bound elsewhere or gone' : ''}): audit-node --cluster-wide reads it` }
      : {}),
    ranges: [...ipam.ranges, ...(input.calico?.blocks ?? [])],
    leftAlone: [
      leftAloneLine(state),
      whereabouts.cannotTell.length > 0 ? `${whereabouts.cannotTell.length} whereabouts allocation(s) that name no pod and whose container is not this node's: cannot tell whose, left alone: ${whereabouts.cannotTell.join(', ')}` : '',
      excused.size > 0 ? `${excused.size} pod(s) held Terminating by a finalizer, nothing of them left in the runtime (--skip-wait-for-delete-timeout): ${[...excused].join(', ')}` : '',
    ].filter(Boolean),
    counts: {
      reservations: state.ipam.reduce((n, d) => n + d.reservations.length, 0),
      cacheEntries: state.cniCache.length,
      checkpoints: state.checkpoints.length,
      sandboxes: state.sandboxes.length,
      notReadySandboxes: state.sandboxes.filter((s) => !s.ready).length,
      pods: pods?.length ?? 0,
    },
  };
}
