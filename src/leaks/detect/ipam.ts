import { canonicalIp, cidrContains } from '../../node/cni/host-local.js';
import type { NodeState } from '../../node/state/types.js';
import { mayBeInSetup, ownerAlive, type Liveness } from '../liveness.js';
import { networkRanges } from '../ranges/config.js';
import { rangeUsage } from '../ranges/usage.js';
import type { Finding, RangeUsage } from '../types.js';

// Leak class 1: host-local reservations whose container is not alive, and pod IPs with no reservation behind them.
export function detectIpamLeaks(state: NodeState, live: Liveness, podCidrs: string[]): { findings: Finding[]; ranges: RangeUsage[]; unverifiable: string[]; inSetup: string[] } {
  const findings: Finding[] = [];
  const unverifiable: string[] = [];
  const reserved = new Set<string>();
  const leakedPaths = new Set<string>();
  const inSetup: string[] = [];
  for (const dir of state.ipam) {
    for (const r of dir.reservations) {
      reserved.add(canonicalIp(r.ip));
      if (ownerAlive(live, r.containerId, r.ip)) continue;
      if (mayBeInSetup(live, r)) {
        inSetup.push(r.path);
        continue;
      }
      leakedPaths.add(r.path);
      findings.push({
        class: 'ip-reservation-leaked',
        severity: 'leak',
        message: `${r.ip} in ${dir.network} is reserved for container ${r.containerId.slice(0, 12) || '(empty)'}, which is not a live sandbox`,
        evidence: { file: r.path, containerId: r.containerId, ip: r.ip, network: dir.network, format: r.ifName === null ? 'id-only' : 'id+ifname' },
      });
    }
  }
  const ranges = state.ipam.flatMap((dir) => rangeUsage(dir, networkRanges(state, dir.network, podCidrs), leakedPaths));

  // The reverse: a pod bound here claims an IP of this node's ranges that no allocator on this node reserved. A
  // terminating pod's status keeps its IP after the teardown released it (until the pod object is gone): not a leak.
  // Nor does a pod's whose sandbox is gone (torn down under a stopped kubelet): its status keeps the IP until kubelet
  // sets up its new sandbox, and nothing on the node uses the address meanwhile.
  const inNodeRange = [...podCidrs, ...ranges.flatMap((r) => (r.cidr === null ? [] : [r.cidr]))].map(cidrContains);
  if (state.ipam.length > 0 && inNodeRange.length === 0) {
    unverifiable.push("pod IPs without a reservation were not checked: the node's pod ranges are unknown (no PodCIDR, no host-local range found)");
  } else if (state.ipam.length > 0) {
    for (const [ip, pod] of live.podIps) {
      if (reserved.has(ip) || !inNodeRange.some((inRange) => inRange(ip)) || live.terminatingPods.has(pod)) continue;
      if (live.runtimeKnown && !live.podsRunning.has(pod)) continue;
      findings.push({
        class: 'pod-ip-unallocated',
        severity: 'leak',
        message: `pod ${pod} claims ${ip}, which no host-local directory on this node reserves (a second allocator may hand it out again)`,
        evidence: { pod, ip },
      });
    }
  }

  // Leak class 7 (part): two allocator directories over the node's PodCIDR hand out the same addresses.
  for (const podCidr of podCidrs) {
    const inPodCidr = cidrContains(podCidr);
    // Another CNI user's network over the PodCIDR is a second allocator too: its addresses collide with pods'.
    const overlapping = [...state.ipam, ...state.foreign.ipam].filter((d) => d.reservations.some((r) => inPodCidr(r.ip)));
    if (overlapping.length > 1) {
      findings.push({
        class: 'duplicate-network-dir',
        severity: 'leak',
        message: `${overlapping.length} CNI networks allocate from ${podCidr}: ${overlapping.map((d) => d.network).join(', ')} (two allocators, duplicate IPs)`,
        evidence: { network: overlapping.map((d) => d.network).join(','), cidr: podCidr, dirs: overlapping.map((d) => d.path) },
      });
    }
  }
  return { findings, ranges, unverifiable, inSetup };
}
