import { describe, expect, it } from 'vitest';
import { leftAloneLine, setAsideForeign } from '../../../src/node/cni/owners.js';
import type { NodeState } from '../../../src/node/state/types.js';
import { auditNode } from '../../../src/leaks/audit.js';
import { filesToClear } from '../../../src/steps/clear-state.js';
import { id, kubenetNode, podOn } from '../leaks/state-builder.js';

// A node that also runs podman: a bridge network "podnet" of its own, with cache entries (no K8S_* arguments),
// host-local reservations and netns pins; and a pod with a second network through Multus (K8S_* arguments).
function nodeWithPodman(podnetRange = '10.88.0'): NodeState {
  const s = kubenetNode(2, 0);
  s.cniConfFiles = [];
  s.processes['cri-dockerd'] = '/usr/bin/cri-dockerd --network-plugin=kubenet';
  const podman = (i: number) => `${'f'.repeat(60)}000${i}`;
  for (const i of [1, 2]) {
    s.cniCache.push({ path: `/var/lib/cni/results/podnet-${podman(i)}-eth0`, format: 'cniCacheV1', networkName: 'podnet', containerId: podman(i), ifName: 'eth0', netns: `/var/run/netns/podman-${i}`, cniArgs: [['IgnoreUnknown', '1']], ips: [`${podnetRange}.${i + 1}`], mtime: 0 });
    s.netns.push(`podman-${i}`);
    s.netnsActivity[`podman-${i}`] = { ageSeconds: 3_600, processes: 0 };
  }
  s.ipam.push({ network: 'podnet', path: '/var/lib/cni/networks/podnet', lastReserved: { 'last_reserved_ip.0': `${podnetRange}.3` }, reservations: [1, 2].map((i) => ({ network: 'podnet', ip: `${podnetRange}.${i + 1}`, path: `/var/lib/cni/networks/podnet/${podnetRange}.${i + 1}`, containerId: podman(i), ifName: 'eth0', mtime: 0 })) });
  // Multus: the first pod's second network, of Kubernetes though not kubelet's own network.
  s.cniCache.push({ path: `/var/lib/cni/results/macvlan-net-${id(1)}-net1`, format: 'cniCacheV1', networkName: 'macvlan-net', containerId: id(1), ifName: 'net1', cniArgs: [['K8S_POD_NAMESPACE', 'demo'], ['K8S_POD_NAME', 'p0']], ips: ['192.168.5.10'], mtime: 0 });
  s.ipam.push({ network: 'macvlan-net', path: '/var/lib/cni/networks/macvlan-net', lastReserved: {}, reservations: [{ network: 'macvlan-net', ip: '192.168.5.10', path: '/var/lib/cni/networks/macvlan-net/192.168.5.10', containerId: id(1), ifName: 'net1', mtime: 0 }] });
  setAsideForeign(s);
  return s;
}

describe('other CNI users on the node', () => {
  it('sets podman\'s entries and directory aside; kubelet\'s network and a pod\'s second network stay', () => {
    const s = nodeWithPodman();
    expect(s.foreign.cniCache.map((e) => e.networkName)).toEqual(['podnet', 'podnet']);
    expect(s.foreign.ipam.map((d) => d.network)).toEqual(['podnet']);
    expect(s.cniCache.map((e) => e.networkName).sort()).toEqual(['kubenet', 'kubenet', 'macvlan-net']);
    expect(s.ipam.map((d) => d.network)).toEqual(['kubenet', 'macvlan-net']);
    expect(leftAloneLine(s)).toBe("left alone: 2 CNI cache entries and 1 host-local directory (2 reservation(s)) of networks that are not Kubernetes' (podnet); 2 network namespace(s) not named as kubelet's runtime names its sandboxes' (podman-1, podman-2)");
  });

  it('a live build\'s loopback (BuildKit\'s CNI worker, go-cni\'s cni-loopback with no pod) is BuildKit\'s: never replayed, never an orphan', () => {
    const s = kubenetNode(1, 0);
    s.processes['cri-dockerd'] = '/usr/bin/cri-dockerd --network-plugin=kubenet';
    const build = `${'b'.repeat(60)}0001`;
    s.cniCache.push({ path: `/var/lib/cni/results/cni-loopback-${build}-lo`, format: 'cniCacheV1', networkName: 'cni-loopback', containerId: build, ifName: 'lo', netns: `/var/lib/buildkit/net/cni/${build}`, cniArgs: [['IgnoreUnknown', '1']], ips: ['127.0.0.1'], mtime: 0 });
    // A pod's loopback of the same name, its sandbox gone: Kubernetes' by its K8S_POD_* arguments.
    s.cniCache.push({ path: `/var/lib/cni/results/cni-loopback-${id(9)}-lo`, format: 'cniCacheV1', networkName: 'cni-loopback', containerId: id(9), ifName: 'lo', cniArgs: [['K8S_POD_NAMESPACE', 'demo'], ['K8S_POD_NAME', 'gone']], ips: ['127.0.0.1'], mtime: 0 });
    setAsideForeign(s);
    expect(s.foreign.cniCache.map((e) => e.containerId)).toEqual([build]);
    expect(s.cniCache.map((e) => e.containerId)).toContain(id(9));
  });

  it('a VPN or management namespace (interfaces, no process) is no leak; a pin named as containerd names its sandboxes\' is', () => {
    const s = kubenetNode(1, 0);
    s.netns.push('mgmt', 'cni-0f3e2a1b-9c8d-4e5f-a6b7-c8d9e0f1a2b3');
    s.netnsActivity.mgmt = { ageSeconds: 3_600, processes: 0 };
    s.netnsActivity['cni-0f3e2a1b-9c8d-4e5f-a6b7-c8d9e0f1a2b3'] = { ageSeconds: 3_600, processes: 0 };
    setAsideForeign(s);
    const report = auditNode({ node: 'n', state: s, pods: [podOn('p0', '10.128.0.2')], podCidr: '10.128.0.0/25' });
    expect(report.findings.filter((f) => f.class === 'netns-orphan').map((f) => f.evidence.file)).toEqual(['/var/run/netns/cni-0f3e2a1b-9c8d-4e5f-a6b7-c8d9e0f1a2b3']);
    expect(report.leftAlone.join('\n')).toContain("1 network namespace(s) not named as kubelet's runtime names its sandboxes' (mgmt)");
  });

  it('never lists podman\'s files to clear, nor its pins as leaks', () => {
    const s = nodeWithPodman();
    expect(filesToClear(s).filter((f) => f.includes('podnet'))).toEqual([]);
    const report = auditNode({ node: 'n', state: s, pods: [podOn('p0', '10.253.6.130'), podOn('p1', '10.253.6.131')], podCidr: '10.253.6.128/25' });
    expect(report.findings).toEqual([]);
    expect(report.leftAlone).toEqual([leftAloneLine(s)]);
  });

  it('still finds another user\'s network over the PodCIDR: a second allocator hands out pods\' addresses', () => {
    const s = nodeWithPodman('10.253.6');
    const report = auditNode({ node: 'n', state: s, pods: [podOn('p0', '10.253.6.130'), podOn('p1', '10.253.6.131')], podCidr: '10.253.6.0/24' });
    expect(report.findings.map((f) => f.class)).toContain('duplicate-network-dir');
  });

  it('keeps an entry of a sandbox the runtime knows, whatever its network, and one that cannot tell its owner', () => {
    const s = kubenetNode(1, 0);
    s.processes['cri-dockerd'] = '/usr/bin/cri-dockerd --network-plugin=kubenet';
    s.cniCache.push({ path: '/var/lib/cni/results/other-x-eth1', format: 'cniCacheV1', networkName: 'other', containerId: id(1), ifName: 'eth1', ips: [], mtime: 0 });
    // cri-dockerd's kubenet attaches each sandbox's loopback as kubenet-loopback, with no K8S_* arguments: a dead sandbox's stays ours.
    s.cniCache.push({ path: `/var/lib/cni/cache/results/kubenet-loopback-${id(7)}-lo`, format: 'cniCacheV1', networkName: 'kubenet-loopback', containerId: id(7), ifName: 'lo', ips: [], mtime: 0 });
    s.cniCache.push({ path: '/var/lib/cni/results/garbled', format: 'unreadable', networkName: '', containerId: '', ifName: '', ips: [], mtime: 0 });
    // Result-only (libcni before 0.8): no arguments to tell by; kept unless it names another configured network.
    s.cniCache.push({ path: `/var/lib/cni/results/ghost-net-${id(9)}-eth0`, format: 'legacy', networkName: 'ghost-net', containerId: id(9), ifName: 'eth0', ips: [], mtime: 0 });
    s.cniCache.push({ path: `/var/lib/cni/results/podman-${id(8)}-eth0`, format: 'legacy', networkName: 'podman', containerId: id(8), ifName: 'eth0', ips: [], mtime: 0 });
    s.cniConfFiles = [{ path: '/etc/cni/net.d/87-podman.conflist', name: '87-podman.conflist', size: 1, mtime: 0, content: '{"name": "podman", "plugins": []}' }];
    setAsideForeign(s);
    expect(s.foreign.cniCache.map((e) => e.networkName)).toEqual(['podman']);
    expect(s.cniCache.map((e) => e.networkName)).toEqual(['kubenet', 'other', 'kubenet-loopback', '', 'ghost-net']);
  });
});
