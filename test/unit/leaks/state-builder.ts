import type { Pod } from '../../../src/cluster/types.js';
import type { NodeState } from '../../../src/node/state/types.js';

// Synthetic node states for the pure detectors: a cri-dockerd + kubenet node by default.
export const id = (n: number) => n.toString(16).padStart(64, '0');

export function emptyState(overrides: Partial<NodeState> = {}): NodeState {
  return {
    hostname: 'n',
    now: 1_800_000_000,
    uid: 0,
    os: { id: 'debian', versionId: '12', prettyName: 'Debian' },
    tools: new Set(['docker']),
    packageManager: 'apt',
    packages: {},
    packageDb: { records: {}, interrupted: false, lockHolders: [] },
    services: { 'cri-docker': { unit: 'cri-docker', loaded: true, active: true, mainPid: 1, execStart: '' } },
    processes: {},
    diskFreeBytes: {},
    cniBinDirs: [],
    kubeletFlags: [],
    cniConfFiles: [],
    ipamRoots: ['/var/lib/cni/networks'],
    refusedDataDirs: [],
    ipam: [],
    cniCache: [],
    foreign: { cniCache: [], ipam: [] },
    checkpoints: [],
    runtimeReachable: true,
    sandboxes: [],
    containers: [],
    netns: [],
    netnsActivity: {},
    veths: [],
    backups: [],
    ...overrides,
  };
}

/** A node with `live` healthy pods (sandbox, reservation, cache entry, checkpoint) and `leaked` reservations. */
export function kubenetNode(live: number, leaked: number): NodeState {
  const ip = (i: number) => `10.253.6.${130 + i}`;
  const s = emptyState();
  const reservations = [];
  for (let i = 0; i < live + leaked; i++) {
    reservations.push({ network: 'kubenet', ip: ip(i), path: `/var/lib/cni/networks/kubenet/${ip(i)}`, containerId: id(i + 1), ifName: 'eth0', mtime: 0 });
  }
  s.ipam = [{ network: 'kubenet', path: '/var/lib/cni/networks/kubenet', reservations, lastReserved: {} }];
  for (let i = 0; i < live; i++) {
    s.sandboxes.push({ id: id(i + 1), ready: true, podUid: `uid-${i}`, namespace: 'demo', name: `p${i}`, pid: 100 + i, createdAt: '' });
    s.checkpoints.push({ path: `/var/lib/cri-dockerd/sandbox/${id(i + 1)}`, kind: 'cri-dockerd', sandboxId: id(i + 1), hostNetwork: false, mtime: 0 });
    s.cniCache.push({ path: `/var/lib/cni/cache/results/kubenet-${id(i + 1)}-eth0`, format: 'cniCacheV1', networkName: 'kubenet', containerId: id(i + 1), ifName: 'eth0', ips: [ip(i)], mtime: 0 });
  }
  return s;
}

export function podOn(name: string, ip: string | undefined, extra: Partial<Pod['metadata']> = {}): Pod {
  return {
    metadata: { name, namespace: 'demo', uid: `uid-${name}`, ...extra },
    spec: { nodeName: 'n', terminationGracePeriodSeconds: 30 },
    status: { phase: 'Running', ...(ip ? { podIP: ip, podIPs: [{ ip }] } : {}) },
  };
}
