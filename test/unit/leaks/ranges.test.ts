import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { auditNode } from '../../../src/leaks/audit.js';
import type { MeasuredRange, RangeUsage } from '../../../src/leaks/types.js';
import type { NodeState } from '../../../src/node/state/types.js';
import { parseNodeState } from '../../../src/node/state/parse.js';
import { emptyState, id } from './state-builder.js';

// Range usage comes from each network's own host-local config. Fixtures: real gather outputs of the test bed's
// kubenet node and containerd fleet host, and containerd's dual-stack conflist (script/setup/install-cni).
const realNode = () => parseNodeState(readFileSync('test/fixtures/real-node-state.txt', 'utf8'));
const fleetHost = () => parseNodeState(readFileSync('test/fixtures/fleet-host-state.txt', 'utf8'));
const DUAL_STACK = readFileSync('test/unit/leaks/fixtures/10-containerd-net.dual-stack.conflist', 'utf8');

const ranges = (state: NodeState, podCidrs: string[]) => auditNode({ node: 'n', state, pods: [], podCidrs }).ranges;
const usage = (r: RangeUsage) => (r.cidr === null ? { cidr: null, reason: r.reason, allocated: r.allocated, inUse: r.inUse, leaked: r.leaked } : { cidr: r.cidr, usable: r.usable, allocated: r.allocated, inUse: r.inUse, leaked: r.leaked });

/** A node on containerd-net whose reservations `live` have a sandbox and `dead` have none. */
function containerdNode(conf: string, live: string[], dead: string[]): NodeState {
  const all = [...live, ...dead];
  const s = emptyState({ services: {}, cniConfFiles: [{ path: '/etc/cni/net.d/10-containerd-net.conflist', name: '10-containerd-net.conflist', size: conf.length, mtime: 0, content: conf }] });
  s.ipam = [{ network: 'containerd-net', path: '/var/lib/cni/networks/containerd-net', lastReserved: {}, reservations: all.map((ip, i) => ({ network: 'containerd-net', ip, path: `/var/lib/cni/networks/containerd-net/${ip}`, containerId: id(i + 1), ifName: 'eth0', mtime: 0 })) }];
  live.forEach((_, i) => s.sandboxes.push({ id: id(i + 1), ready: true, podUid: `u${i}`, namespace: 'demo', name: `p${i}`, pid: 10 + i, createdAt: '' }));
  return s;
}

describe('host-local range usage', () => {
  it('takes a real conflist\'s subnet even when the PodCIDR is another one, and never goes negative', () => {
    const state = fleetHost();
    const [first] = ranges(state, ['10.128.0.0/25']);
    expect(first).toEqual({ network: 'containerd-net', cidr: '10.128.0.128/25', first: '10.128.0.129', last: '10.128.0.254', source: '/etc/cni/net.d/10-containerd-net.conflist', usable: 125, allocated: 3, inUse: 3, leaked: 0 });
    const forgotten = state.ipam[0]!.reservations[0]!.containerId;
    state.sandboxes = state.sandboxes.filter((s) => s.id !== forgotten);
    state.cniCache = state.cniCache.filter((e) => e.containerId !== forgotten);
    expect(ranges(state, ['10.128.0.0/25']).map(usage)).toEqual([{ cidr: '10.128.0.128/25', usable: 125, allocated: 3, inUse: 2, leaked: 1 }]);
  });

  it('takes kubenet\'s range from the PodCIDR (its config is never on disk): the real node\'s /25 has 125 usable', () => {
    expect(ranges(realNode(), ['10.128.0.0/25'])).toEqual([{ network: 'kubenet', cidr: '10.128.0.0/25', first: '10.128.0.1', last: '10.128.0.126', source: 'PodCIDR', usable: 125, allocated: 1, inUse: 1, leaked: 0 }]);
  });

  it('counts a dual-stack conflist per range: each family\'s reservations in its own range', () => {
    const state = containerdNode(DUAL_STACK, ['10.88.0.2', '2001:4860:4860::2'], ['10.88.0.3', '2001:4860:4860::3', '2001:4860:4860::4']);
    const found = ranges(state, ['10.244.1.0/24']);
    expect(found.map(usage)).toEqual([
      { cidr: '10.88.0.0/16', usable: 65_533, allocated: 2, inUse: 1, leaked: 1 },
      { cidr: '2001:4860:4860::/64', usable: Number(2n ** 64n - 2n), allocated: 3, inUse: 1, leaked: 2 },
    ]);
    expect((found[1] as MeasuredRange).last).toBe('2001:4860:4860:0:ffff:ffff:ffff:ffff');
  });

  it('takes both PodCIDRs of a dual-stack kubenet node', () => {
    const state = containerdNode('', ['10.253.6.130', 'fd00:10:244:6::2'], []);
    state.cniConfFiles = [];
    state.ipam[0]!.network = 'kubenet';
    expect(ranges(state, ['10.253.6.128/25', 'fd00:10:244:6::/64']).map(usage)).toEqual([
      { cidr: '10.253.6.128/25', usable: 125, allocated: 1, inUse: 1, leaked: 0 },
      { cidr: 'fd00:10:244:6::/64', usable: Number(2n ** 64n - 2n), allocated: 1, inUse: 1, leaked: 0 },
    ]);
  });

  const legacy = (ipam: object) => JSON.stringify({ cniVersion: '0.3.1', name: 'containerd-net', type: 'bridge', ipam: { type: 'host-local', ...ipam } });
  it.each([
    ['the legacy subnet with host-local\'s defaults', { subnet: '10.10.0.0/24' }, 253],
    ['rangeStart and rangeEnd, the gateway outside them', { subnet: '10.10.0.0/16', rangeStart: '10.10.1.20', rangeEnd: '10.10.3.50', gateway: '10.10.0.254' }, 543],
    ['rangeStart and rangeEnd, the gateway inside them', { subnet: '10.10.0.0/24', rangeStart: '10.10.0.1', rangeEnd: '10.10.0.10', gateway: '10.10.0.5' }, 9],
    ['an IPv6 subnet, whose last address is usable', { subnet: 'fd00::/120' }, 254],
  ])('counts usable addresses as host-local does: %s', (_, ipam, usable) => {
    const [range] = ranges(containerdNode(legacy(ipam), [], []), []);
    expect(range).toMatchObject({ usable, allocated: 0 });
  });

  it('reports a network whose config is gone with why, and reservations outside every range apart', () => {
    const state = containerdNode(DUAL_STACK, ['10.88.0.2', '10.99.0.7'], []);
    state.ipam.push({ network: 'cbr0', path: '/var/lib/cni/networks/cbr0', lastReserved: {}, reservations: [{ network: 'cbr0', ip: '10.0.0.9', path: '/var/lib/cni/networks/cbr0/10.0.0.9', containerId: id(99), ifName: 'eth0', mtime: 0 }] });
    const found = ranges(state, []).map(usage);
    expect(found).toContainEqual({ cidr: null, reason: expect.stringMatching(/outside every range of \/etc\/cni\/net\.d\/10-containerd-net\.conflist/), allocated: 1, inUse: 1, leaked: 0 });
    expect(found).toContainEqual({ cidr: null, reason: expect.stringMatching(/no CNI config .* names network "cbr0"/), allocated: 1, inUse: 0, leaked: 1 });
  });

  it('reports kubenet without a PodCIDR with why, not as zeros', () => {
    const state = containerdNode('', ['10.253.6.130'], []);
    state.cniConfFiles = [];
    state.ipam[0]!.network = 'kubenet';
    const report = auditNode({ node: 'n', state, pods: [], podCidrs: [] });
    expect(report.ranges.map(usage)).toEqual([{ cidr: null, reason: expect.stringMatching(/PodCIDR/), allocated: 1, inUse: 1, leaked: 0 }]);
    expect(report.verdict).toBe('unverifiable');
  });

  it('fills Calico\'s usePodCidr from the node\'s PodCIDR of that family', () => {
    const calico = JSON.stringify({ name: 'k8s-pod-network', cniVersion: '0.3.1', plugins: [{ type: 'calico', ipam: { type: 'host-local', ranges: [[{ subnet: 'usePodCidr' }], [{ subnet: 'usePodCidrIPv6' }]] } }] });
    const state = containerdNode(calico, ['10.244.3.5'], []);
    state.ipam[0]!.network = 'k8s-pod-network';
    state.cniConfFiles[0]!.name = '10-calico.conflist';
    expect(ranges(state, ['10.244.3.0/24', 'fd00:3::/120']).map(usage)).toEqual([
      { cidr: '10.244.3.0/24', usable: 253, allocated: 1, inUse: 1, leaked: 0 },
      { cidr: 'fd00:3::/120', usable: 254, allocated: 0, inUse: 0, leaked: 0 },
    ]);
  });
});
