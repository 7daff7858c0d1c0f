import { cidrContains, usablePodAddresses } from '../../node/cni/host-local.js';
import type { NodeState } from '../../node/state/types.js';
import { ownerAlive, type Liveness } from '../liveness.js';
import type { Finding, RangeUsage } from '../types.js';

// Leak class 1: host-local reservations whose container is not alive, and pod IPs with no reservation behind them.
export function detectIpamLeaks(state: NodeState, live: Liveness, podCidr: string | undefined): { findings: Finding[]; ranges: RangeUsage[] } {
  const findings: Finding[] = [];
  const ranges: RangeUsage[] = [];
  const inPodCidr = podCidr ? cidrContains(podCidr) : () => true;
  const reserved = new Set<string>();
  for (const dir of state.ipam) {
    let leaked = 0;
    for (const r of dir.reservations) {
      reserved.add(r.ip);
      if (ownerAlive(live, r.containerId, r.ip)) continue;
      leaked++;
      findings.push({
        class: 'ip-reservation-leaked',
        severity: 'leak',
        message: `${r.ip} in ${dir.network} is reserved for container ${r.containerId.slice(0, 12) || '(empty)'}, which is not a live sandbox`,
        evidence: { file: r.path, containerId: r.containerId, ip: r.ip, network: dir.network, format: r.ifName === null ? 'id-only' : 'id+ifname' },
      });
    }
    const cidr = podCidr ?? '';
    const inRange = dir.reservations.filter((r) => inPodCidr(r.ip)).length;
    ranges.push({ network: dir.network, cidr, usable: cidr ? usablePodAddresses(cidr) : 0, allocated: inRange, inUse: inRange - leaked, leaked });
  }
  // The reverse: a pod bound here claims an IP that no allocator on this node reserved. A terminating pod's status
  // keeps its IP after the teardown released it (until the pod object is gone): that is not a second allocator.
  if (state.ipam.length > 0) {
    for (const [ip, pod] of live.podIps) {
      if (reserved.has(ip) || !inPodCidr(ip) || live.terminatingPods.has(pod)) continue;
      findings.push({
        class: 'pod-ip-unallocated',
        severity: 'leak',
        message: `pod ${pod} claims ${ip}, which no host-local directory on this node reserves (a second allocator may hand it out again)`,
        evidence: { pod, ip },
      });
    }
  }
  // Leak class 7 (part): two allocator directories over the node's range hand out the same addresses.
  if (podCidr) {
    const overlapping = state.ipam.filter((d) => d.reservations.some((r) => inPodCidr(r.ip)));
    if (overlapping.length > 1) {
      findings.push({
        class: 'duplicate-network-dir',
        severity: 'leak',
        message: `${overlapping.length} CNI networks allocate from ${podCidr}: ${overlapping.map((d) => d.network).join(', ')} (two allocators, duplicate IPs)`,
        evidence: { network: overlapping.map((d) => d.network).join(','), cidr: podCidr, dirs: overlapping.map((d) => d.path) },
      });
    }
  }
  return { findings, ranges };
}
