import type { Pod } from '../cluster/types.js';
import type { NodeState } from '../node/state/types.js';
import { detectCacheLeaks } from './detect/cache.js';
import { detectIpamLeaks } from './detect/ipam.js';
import { detectNetnsLeaks } from './detect/netns.js';
import { detectCheckpointLeaks, detectSandboxAccumulation, detectStuckTerminating } from './detect/sandboxes.js';
import { liveness } from './liveness.js';
import type { AuditReport, Finding } from './types.js';

export interface AuditInput {
  node: string;
  state: NodeState;
  /** Pods bound to the node, from the API. */
  pods: Pod[];
  podCidr?: string;
  /** Findings from the cluster side (Calico IPAM), which need no node state. */
  clusterFindings?: Finding[];
  nowMs?: number;
}

/** The leak audit: pure, over one node state and one cluster view. The runbook's verify step is this. */
export function auditNode(input: AuditInput): AuditReport {
  const { state, pods } = input;
  const live = liveness(state, pods);
  const ipam = detectIpamLeaks(state, live, input.podCidr);
  const findings = [
    ...ipam.findings,
    ...detectCacheLeaks(state, live),
    ...detectCheckpointLeaks(state),
    ...detectSandboxAccumulation(state),
    ...detectStuckTerminating(state, pods, input.nowMs ?? state.now * 1000),
    ...detectNetnsLeaks(state),
    ...(input.clusterFindings ?? []),
  ];
  return {
    node: input.node,
    takenAt: state.now,
    findings,
    ranges: ipam.ranges,
    counts: {
      reservations: state.ipam.reduce((n, d) => n + d.reservations.length, 0),
      cacheEntries: state.cniCache.length,
      checkpoints: state.checkpoints.length,
      sandboxes: state.sandboxes.length,
      notReadySandboxes: state.sandboxes.filter((s) => !s.ready).length,
      pods: pods.length,
    },
  };
}
