import type { NodeState } from '../../node/state/types.js';
import type { Finding } from '../types.js';

/** A runtime pins a sandbox's netns before its CNI ADD and its first process: a pin this young may be in setup. */
export const NETNS_SETUP_GRACE_SECONDS = 60;

/**
 * Kubernetes' pins are the ones kubelet's runtime makes for its sandboxes: containerd's CRI names them `cni-` and a
 * UUID (cri-dockerd pins none: docker keeps its own). Any other pin is another user's (a VPN's or a management
 * namespace, `ip netns add mgmt`; podman's `netns-*`), left alone whether or not a process lives in it.
 */
export const isKubernetesNetns = (name: string) => /^cni-[0-9a-f-]+$/.test(name);

/** A Kubernetes pin younger than the setup grace that no process lives in yet: its sandbox is in setup. */
export function isPinInSetup(state: NodeState, name: string): boolean {
  const a = state.netnsActivity[name];
  return isKubernetesNetns(name) && a !== undefined && a.processes === 0 && a.ageSeconds < NETNS_SETUP_GRACE_SECONDS;
}

/** The pinned namespaces that are not Kubernetes': listed, never judged. */
export const foreignNetns = (state: NodeState) => state.netns.filter((n) => !isKubernetesNetns(n));

// Leak class 7: Kubernetes' pinned network namespaces that no sandbox and no CNI cache entry refers to. containerd 1.6's
// libcni cache entries do not name the netns, so a pin some process still lives in (a sandbox's pause) is live too.
export function detectNetnsLeaks(state: NodeState): Finding[] {
  if (!state.runtimeReachable) return [];
  // A pin another CNI user's entry names (podman's) is that user's, not a leak.
  const referenced = new Set([...state.cniCache, ...state.foreign.cniCache].map((e) => e.netns?.split('/').pop()).filter(Boolean));
  const inUse = (name: string) => {
    const a = state.netnsActivity[name];
    // Unknown activity cannot tell an orphan from a pin in use: never judged.
    return a === undefined || a.processes > 0 || a.ageSeconds < NETNS_SETUP_GRACE_SECONDS;
  };
  return state.netns
    .filter((name) => isKubernetesNetns(name) && !referenced.has(name) && !inUse(name))
    .map((name) => ({
      class: 'netns-orphan' as const,
      severity: 'leak' as const,
      message: `network namespace ${name} belongs to no sandbox and no CNI attachment, and no process lives in it`,
      evidence: { file: `/var/run/netns/${name}` },
    }));
}
