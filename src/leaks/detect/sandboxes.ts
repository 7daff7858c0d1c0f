import { podKey } from '../../cluster/pods.js';
import type { Pod } from '../../cluster/types.js';
import { deletedLongAgo } from '../../cluster/drain/filters.js';
import type { NodeState } from '../../node/state/types.js';
import type { Finding } from '../types.js';

// Leak classes 3, 4 and 5: checkpoints and sandboxes that disagree, sandboxes kubelet will never remove, and pods
// stuck Terminating behind leftover containers.
export const SANDBOX_WARNING_THRESHOLD = 1000;
/** The least time past deletionTimestamp before a pod counts as stuck: kubelet's kill, the network's DEL and the
 * status sync take seconds on a busy node, longer than a short grace period (2 s pods were called stuck at 5 s). */
export const STUCK_AFTER_SECONDS = 30;

export function detectCheckpointLeaks(state: NodeState): Finding[] {
  if (!state.runtimeReachable) return [];
  const sandboxIds = new Set(state.sandboxes.map((s) => s.id));
  const findings: Finding[] = state.checkpoints
    .filter((c) => !sandboxIds.has(c.sandboxId))
    .map((c) => ({
      class: 'checkpoint-orphan' as const,
      severity: 'leak' as const,
      message: `${c.kind} checkpoint of sandbox ${c.sandboxId.slice(0, 12)}${c.podName ? ` (${c.namespace}/${c.podName})` : ''} has no container`,
      evidence: { file: c.path, containerId: c.sandboxId, pod: c.podName ? `${c.namespace}/${c.podName}` : undefined },
    }));
  const checkpointed = new Set(state.checkpoints.map((c) => c.sandboxId));
  const usesCheckpoints = state.checkpoints.length > 0 || state.services['cri-docker']?.loaded;
  if (usesCheckpoints) {
    for (const s of state.sandboxes) {
      if (checkpointed.has(s.id)) continue;
      findings.push({
        class: 'sandbox-without-checkpoint',
        severity: 'leak',
        message: `sandbox ${s.id.slice(0, 12)} (${s.namespace}/${s.name}) has no checkpoint: its network can no longer be torn down by the runtime`,
        evidence: { containerId: s.id, pod: `${s.namespace}/${s.name}` },
      });
    }
  }
  return findings;
}

export function detectSandboxAccumulation(state: NodeState): Finding[] {
  const findings: Finding[] = [];
  const holding = new Map<string, { pod: string; sandboxes: number; containers: number }>();
  const bySandbox = new Map<string, number>();
  for (const c of state.containers) {
    if (c.state === 'created' || c.state === 'exited') bySandbox.set(c.sandboxId, (bySandbox.get(c.sandboxId) ?? 0) + 1);
  }
  for (const s of state.sandboxes) {
    const held = bySandbox.get(s.id) ?? 0;
    if (s.ready || held === 0) continue;
    const key = `${s.namespace}/${s.name}`;
    const entry = holding.get(key) ?? { pod: key, sandboxes: 0, containers: 0 };
    entry.sandboxes++;
    entry.containers += held;
    holding.set(key, entry);
  }
  for (const h of holding.values()) {
    // kubelet keeps the last dead instance of a container (for logs), and with it that one old sandbox: normal.
    // More than one is the pile-up that never shrinks.
    if (h.sandboxes < 2) continue;
    findings.push({
      class: 'sandbox-accumulation',
      severity: 'leak',
      message: `pod ${h.pod}: ${h.sandboxes} not-ready sandboxes kept alive by ${h.containers} created/exited container(s); kubelet never removes these`,
      evidence: { pod: h.pod, sandboxes: h.sandboxes, containers: h.containers },
    });
  }
  const total = state.sandboxes.length;
  if (total >= SANDBOX_WARNING_THRESHOLD) {
    findings.push({
      class: 'sandbox-accumulation',
      severity: 'warning',
      message: `${total} sandboxes on the node: CRI list calls broke (gRPC message size) at about 1,400 in the field`,
      evidence: { sandboxes: total, notReady: state.sandboxes.filter((s) => !s.ready).length },
    });
  }
  return findings;
}

/**
 * Pods deleted longer ago than `skipSeconds` (the run's --skip-wait-for-delete-timeout; 0: none) of which the runtime
 * holds nothing: a finalizer keeps only their API object. The operator said not to wait for them; not stuck here.
 */
export function excusedTerminating(state: NodeState, pods: Pod[], nowMs: number, skipSeconds: number): Set<string> {
  const held = (pod: Pod) => state.containers.some((c) => c.podUid === pod.metadata.uid) || state.sandboxes.some((s) => s.podUid === pod.metadata.uid);
  const excused = pods.filter((p) => state.runtimeReachable && deletedLongAgo(p, { skipWaitForDeleteTimeoutSeconds: skipSeconds }, nowMs) !== undefined && !held(p));
  return new Set(excused.map(podKey));
}

export function detectStuckTerminating(state: NodeState, pods: Pod[], nowMs: number, excused = new Set<string>()): Finding[] {
  const findings: Finding[] = [];
  for (const pod of pods) {
    if (excused.has(podKey(pod))) continue;
    const deleting = pod.metadata.deletionTimestamp;
    if (!deleting) continue;
    const grace = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
    // deletionTimestamp is already "requested time + grace"; allow one more grace period (at least STUCK_AFTER_SECONDS).
    const overdueMs = nowMs - Date.parse(deleting);
    if (overdueMs <= Math.max(grace, STUCK_AFTER_SECONDS) * 1000) continue;
    const leftovers = state.containers.filter((c) => c.podUid === pod.metadata.uid);
    const sandboxes = state.sandboxes.filter((s) => s.podUid === pod.metadata.uid);
    findings.push({
      class: 'stuck-terminating',
      severity: 'leak',
      message: `pod ${podKey(pod)} has been Terminating ${Math.round(overdueMs / 1000)}s past its grace period; ${state.runtimeReachable ? `${leftovers.length} container(s) and ${sandboxes.length} sandbox(es) left: ${leftovers.map((c) => `${c.name}:${c.state}:${c.id.slice(0, 12)}`).join(', ') || 'none in the runtime'}` : 'its containers are unknown (the runtime did not answer)'}`,
      evidence: { pod: podKey(pod), containers: leftovers.map((c) => ({ id: c.id, name: c.name, state: c.state })), sandboxes: sandboxes.map((s) => s.id) },
    });
  }
  return findings;
}
