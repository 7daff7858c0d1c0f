import { isTerminal, podIps, podKey } from '../cluster/pods.js';
import type { Pod } from '../cluster/types.js';
import { canonicalIp } from '../node/cni/host-local.js';
import type { NodeState } from '../node/state/types.js';
import { isPinInSetup, NETNS_SETUP_GRACE_SECONDS } from './detect/netns.js';

// Who is alive on a node, as the union the reclaim rules demand: the runtime's sandboxes (in-flight ones included),
// CNI cache entries whose netns still exists, pod IPs from the API, live network namespaces.
export interface Liveness {
  sandboxIds: Set<string>;
  /** The sandboxes that run (a stopped one's network was torn down by its stop: it holds no address any more). */
  readySandboxIds: Set<string>;
  /** Network namespace names and paths that exist. */
  netns: Set<string>;
  /** IPs (canonical form) that pods bound to this node (and not finished) claim, to the pod. */
  podIps: Map<string, string>;
  /** Pods being deleted: their network may already be released while their status still shows the IP. */
  terminatingPods: Set<string>;
  /** Pods (namespace/name) the runtime runs a sandbox for: a pod without one claims only the IP of a gone sandbox. */
  podsRunning: Set<string>;
  /** Container IDs whose CNI cache entry points at a netns that exists. */
  attachedContainers: Set<string>;
  /** Whether the runtime answered; if not, nothing may be judged dead by its absence from the runtime. */
  runtimeKnown: boolean;
  /** Whether the pod list was read; if not, no IP may be judged dead by its absence from the pods. */
  podsKnown: boolean;
  /**
   * Kubernetes' pins younger than the setup grace with no process yet: sandboxes in setup. containerd lists a sandbox
   * only once its CNI ADDs ended, so the records an ADD already wrote (host-local's reservation, the loopback's cache
   * entry) have no listed owner meanwhile.
   */
  pinsInSetup: string[];
  /** The node's clock when it was read (seconds), for the age of a record. */
  now: number;
}

/** `pods` undefined: the pod list could not be read. */
export function liveness(state: NodeState, pods: Pod[] | undefined): Liveness {
  const netns = new Set<string>();
  for (const name of state.netns) {
    netns.add(name);
    netns.add(`/var/run/netns/${name}`);
    netns.add(`/run/netns/${name}`);
  }
  for (const s of state.sandboxes) if (s.pid > 0) netns.add(`/proc/${s.pid}/ns/net`);
  const podIpMap = new Map<string, string>();
  const terminating = new Set<string>();
  for (const pod of pods ?? []) {
    if (isTerminal(pod)) continue;
    if (pod.metadata.deletionTimestamp) terminating.add(podKey(pod));
    for (const ip of podIps(pod)) podIpMap.set(canonicalIp(ip), podKey(pod));
  }
  const attached = new Set<string>();
  for (const entry of state.cniCache) {
    if (entry.netns && netns.has(entry.netns)) attached.add(entry.containerId);
  }
  return {
    sandboxIds: new Set(state.sandboxes.map((s) => s.id)),
    readySandboxIds: new Set(state.sandboxes.filter((s) => s.ready).map((s) => s.id)),
    netns,
    podIps: podIpMap,
    terminatingPods: terminating,
    podsRunning: new Set(state.sandboxes.filter((s) => s.ready).map((s) => `${s.namespace}/${s.name}`)),
    attachedContainers: attached,
    runtimeKnown: state.runtimeReachable,
    podsKnown: pods !== undefined,
    pinsInSetup: state.netns.filter((n) => isPinInSetup(state, n)),
    now: state.now,
  };
}

/** An owner is alive if the runtime knows it, its network is attached, or a pod claims the IP. */
export function ownerAlive(live: Liveness, containerId: string, ip?: string): boolean {
  if (live.sandboxIds.has(containerId) || live.attachedContainers.has(containerId)) return true;
  if (ip !== undefined && live.podIps.has(canonicalIp(ip))) return true;
  // Absence proves death only when every source answered: the blind one may be the one that knows the owner.
  return !live.runtimeKnown || (ip !== undefined && !live.podsKnown);
}

/**
 * A record with no live owner that may be a sandbox's in setup: it names no netns to tell whose it is, it was written
 * within the setup grace, and a sandbox is in setup. It is judged on a later read, never called a leak or clean now.
 */
export function mayBeInSetup(live: Liveness, record: { mtime: number; netns?: string }): boolean {
  return live.pinsInSetup.length > 0 && !record.netns && live.now - record.mtime < NETNS_SETUP_GRACE_SECONDS;
}

/** The audit's word on records held back by mayBeInSetup. */
export function inSetupLine(live: Liveness, records: string[]): string[] {
  if (records.length === 0) return [];
  const pins = live.pinsInSetup.join(', ');
  return [`${records.length} record(s) written less than ${NETNS_SETUP_GRACE_SECONDS}s ago, of no listed sandbox, while a sandbox is in setup (${pins}: pinned, no process yet); judged on a later read: ${records.join(', ')}`];
}
