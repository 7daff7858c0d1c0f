import { describe, expect, it } from 'vitest';
import { auditNode } from '../../../src/leaks/audit.js';
import { STUCK_AFTER_SECONDS } from '../../../src/leaks/detect/sandboxes.js';
import { refusingLines } from '../../../src/leaks/reclaim/plan.js';
import { emptyState, id, kubenetNode, podOn } from './state-builder.js';

const audit = (state: ReturnType<typeof emptyState>, pods = [] as ReturnType<typeof podOn>[], podCidr = '10.253.6.128/25') =>
  auditNode({ node: 'n', state, pods, podCidr, nowMs: state.now * 1000 });

describe('leak audit', () => {
  it('a clean node has zero findings', () => {
    const report = audit(kubenetNode(5, 0));
    expect(report).toMatchObject({ verdict: 'clean', unverifiable: [], findings: [], clusterFindings: [] });
    expect(report.ranges).toEqual([{ network: 'kubenet', cidr: '10.253.6.128/25', first: '10.253.6.129', last: '10.253.6.254', source: 'PodCIDR', usable: 125, allocated: 5, inUse: 5, leaked: 0 }]);
  });

  it('the field report: 125 reserved, 118 in use, 7 leaked, with the file and container of each', () => {
    const report = audit(kubenetNode(118, 7));
    const leaked = report.findings.filter((f) => f.class === 'ip-reservation-leaked');
    expect(leaked).toHaveLength(7);
    expect(leaked[0]!.evidence).toMatchObject({ file: '/var/lib/cni/networks/kubenet/10.253.6.248', containerId: id(119), ip: '10.253.6.248' });
    expect(report.ranges[0]).toMatchObject({ usable: 125, allocated: 125, inUse: 118, leaked: 7 });
  });

  it('an IP a live pod claims is never a leak, even when the runtime forgot the container', () => {
    const state = kubenetNode(1, 1);
    expect(audit(state, [podOn('p', '10.253.6.131')]).findings).toEqual([]);
  });

  it('judges nothing dead when the runtime did not answer, and says it could not verify instead of clean', () => {
    const state = { ...kubenetNode(0, 3), runtimeReachable: false };
    const report = audit(state);
    expect(report.findings).toEqual([]);
    expect(report.verdict).toBe('unverifiable');
    expect(report.unverifiable).toEqual([expect.stringMatching(/runtime did not answer/)]);
  });

  it('finds cache entries and checkpoints without sandboxes, and sandboxes without checkpoints', () => {
    const state = kubenetNode(3, 0);
    state.sandboxes.shift();
    state.checkpoints.pop();
    const classes = audit(state).findings.map((f) => f.class).sort();
    expect(classes).toEqual(['checkpoint-orphan', 'cni-cache-orphan', 'ip-reservation-leaked', 'sandbox-without-checkpoint']);
  });

  it('counts not-ready sandboxes kept by created containers, per pod, and warns near the CRI list limit', () => {
    const state = emptyState({ services: {} });
    for (let i = 0; i < 1200; i++) state.sandboxes.push({ id: id(i), ready: false, podUid: 'u', namespace: 'demo', name: 'crashy', pid: 0, createdAt: '' });
    for (let i = 0; i < 1200; i++) state.containers.push({ id: id(10_000 + i), sandboxId: id(i), state: 'created', podUid: 'u', namespace: 'demo', podName: 'crashy', name: 'main' });
    const found = audit(state, [], undefined as unknown as string).findings.filter((f) => f.class === 'sandbox-accumulation');
    expect(found.map((f) => f.severity).sort()).toEqual(['leak', 'warning']);
    expect(found.find((f) => f.severity === 'leak')!.evidence).toMatchObject({ pod: 'demo/crashy', sandboxes: 1200, containers: 1200 });
  });

  it('leaves alone the one old sandbox kubelet keeps with a pod\'s last dead container', () => {
    const state = emptyState({ services: {} });
    state.sandboxes.push({ id: id(1), ready: false, podUid: 'u', namespace: 'demo', name: 'agent', pid: 0, createdAt: '' });
    state.sandboxes.push({ id: id(2), ready: true, podUid: 'u', namespace: 'demo', name: 'agent', pid: 9, createdAt: '' });
    state.containers.push({ id: id(3), sandboxId: id(1), state: 'exited', podUid: 'u', namespace: 'demo', podName: 'agent', name: 'main' });
    expect(audit(state, [], undefined as unknown as string).findings).toEqual([]);
  });

  it('finds a pod stuck Terminating past its grace period with the container that holds it', () => {
    const state = emptyState({ services: {} });
    state.containers.push({ id: id(9), sandboxId: id(8), state: 'created', podUid: 'uid-stuck', namespace: 'demo', podName: 'stuck', name: 'app' });
    const pod = podOn('stuck', undefined, { deletionTimestamp: new Date((state.now - 300) * 1000).toISOString(), deletionGracePeriodSeconds: 30 });
    const found = audit(state, [pod]).findings;
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ class: 'stuck-terminating', evidence: { pod: 'demo/stuck', containers: [{ id: id(9), state: 'created' }] } });
  });

  it('calls a pod stuck only STUCK_AFTER_SECONDS past its deletionTimestamp when its grace period is shorter: a busy kubelet takes seconds', () => {
    const state = emptyState({ services: {} });
    state.containers.push({ id: id(9), sandboxId: id(8), state: 'exited', podUid: 'uid-web', namespace: 'demo', podName: 'web', name: 'app' });
    const deletedAgo = (s: number) => podOn('web', undefined, { deletionTimestamp: new Date((state.now - s) * 1000).toISOString(), deletionGracePeriodSeconds: 2 });
    expect(audit(state, [deletedAgo(5)]).findings).toEqual([]);
    expect(audit(state, [deletedAgo(STUCK_AFTER_SECONDS)]).findings).toEqual([]);
    expect(audit(state, [deletedAgo(STUCK_AFTER_SECONDS + 2)]).findings.map((f) => [f.class, f.message])).toEqual([
      ['stuck-terminating', `pod demo/web has been Terminating ${STUCK_AFTER_SECONDS + 2}s past its grace period; 1 container(s) and 0 sandbox(es) left: app:exited:${id(9).slice(0, 12)}`],
    ]);
  });

  it('--skip-wait-for-delete-timeout: a pod a finalizer holds, of which the runtime holds nothing, is left alone and said; with a container left it is still stuck', () => {
    const state = emptyState({ services: {} });
    const held = podOn('held', undefined, { deletionTimestamp: new Date((state.now - 300) * 1000).toISOString(), deletionGracePeriodSeconds: 30 });
    const excused = auditNode({ node: 'n', state, pods: [held], skipWaitForDeleteTimeoutSeconds: 60 });
    expect([excused.verdict, excused.leftAlone]).toEqual(['clean', ['1 pod(s) held Terminating by a finalizer, nothing of them left in the runtime (--skip-wait-for-delete-timeout): demo/held']]);
    expect(auditNode({ node: 'n', state, pods: [held], skipWaitForDeleteTimeoutSeconds: 600 }).findings.map((f) => f.class)).toEqual(['stuck-terminating']);
    state.containers.push({ id: id(9), sandboxId: id(8), state: 'created', podUid: 'uid-held', namespace: 'demo', podName: 'held', name: 'app' });
    expect(auditNode({ node: 'n', state, pods: [held], skipWaitForDeleteTimeoutSeconds: 60 }).findings.map((f) => f.class)).toEqual(['stuck-terminating']);
  });

  it('finds a pod IP with no reservation, and two allocators over one PodCIDR', () => {
    const state = kubenetNode(2, 0);
    state.ipam.push({ network: 'cbr0', path: '/var/lib/cni/networks/cbr0', reservations: [{ network: 'cbr0', ip: '10.253.6.130', path: '/var/lib/cni/networks/cbr0/10.253.6.130', containerId: id(1), ifName: 'eth0', mtime: 0 }], lastReserved: {} });
    const classes = audit(state, [podOn('p0', '10.253.6.200')]).findings.map((f) => f.class).sort();
    expect(classes).toEqual(['duplicate-network-dir', 'pod-ip-unallocated']);
  });

  it("does not count the IP a pod's gone sandbox had (kubelet stopped, its network torn down): nothing uses it", () => {
    const state = kubenetNode(1, 0);
    const stale = podOn('p0', '10.253.6.200');
    expect(audit(state, [stale]).findings.map((f) => f.class)).toEqual(['pod-ip-unallocated']);
    state.sandboxes[0]!.ready = false;
    expect(audit(state, [stale]).findings).toEqual([]);
    expect(audit(kubenetNode(0, 0), [stale]).findings).toEqual([]);
  });

  it('does not count the IP of a terminating pod whose network was already released', () => {
    const state = kubenetNode(2, 0);
    const going = podOn('going', '10.253.6.200', { deletionTimestamp: new Date(state.now * 1000).toISOString(), deletionGracePeriodSeconds: 30 });
    expect(audit(state, [going]).findings).toEqual([]);
    expect(audit(state, [podOn('p0', '10.253.6.200')]).findings.map((f) => f.class)).toEqual(['pod-ip-unallocated']);
  });

  it('finds pinned network namespaces nothing refers to', () => {
    const state = emptyState({ services: {}, netns: ['cni-1234'], netnsActivity: { 'cni-1234': { ageSeconds: 600, processes: 0 } } });
    expect(audit(state).findings.map((f) => f.class)).toEqual(['netns-orphan']);
  });

  it('does not call a netns an orphan while a process lives in it or while it is young (containerd 1.6 caches no netns)', () => {
    const netns = ['cni-live', 'cni-new', 'cni-dead'];
    const netnsActivity = { 'cni-live': { ageSeconds: 600, processes: 1 }, 'cni-new': { ageSeconds: 5, processes: 0 }, 'cni-dead': { ageSeconds: 600, processes: 0 } };
    expect(audit(emptyState({ services: {}, netns, netnsActivity })).findings.map((f) => f.evidence.file)).toEqual(['/var/run/netns/cni-dead']);
  });

  it('holds back, as not verified, the records of a sandbox in setup (written, not listed yet); older ones are leaks', () => {
    // containerd lists a sandbox only once its ADDs ended: the loopback's entry and eth0's reservation come first.
    let inSetupReport = undefined as unknown as ReturnType<typeof audit>;
    const inSetup = (pinAge: number, processes: number, recordAge: number, netns?: string) => {
      const state = emptyState({ services: {}, netns: ['cni-a1b2'], netnsActivity: { 'cni-a1b2': { ageSeconds: pinAge, processes } } });
      const mtime = state.now - recordAge;
      state.cniCache.push({ path: `/var/lib/cni/results/cni-loopback-${id(7)}-lo`, format: 'cniCacheV1', networkName: 'cni-loopback', containerId: id(7), ifName: 'lo', ips: ['127.0.0.1'], mtime, netns });
      state.ipam.push({ network: 'net1', path: '/var/lib/cni/networks/net1', lastReserved: {}, reservations: [{ network: 'net1', ip: '10.9.0.5', path: '/var/lib/cni/networks/net1/10.9.0.5', containerId: id(7), ifName: 'eth0', mtime }] });
      const r = audit(state, [], undefined as unknown as string);
      inSetupReport = r;
      return [r.verdict, r.findings.map((f) => f.class).sort(), r.unverifiable.filter((u) => u.includes('in setup')).length];
    };
    expect(inSetup(5, 0, 2)).toEqual(['unverifiable', [], 1]);
    const held = inSetupReport;
    // Written before the grace: a leak, whatever is in setup. A pin with a process is a sandbox set up, not in setup.
    expect(inSetup(5, 0, 120)).toEqual(['leaks', ['cni-cache-orphan', 'ip-reservation-leaked'], 0]);
    expect(inSetup(5, 1, 2)).toEqual(['leaks', ['cni-cache-orphan', 'ip-reservation-leaked'], 0]);
    expect(inSetup(120, 0, 2)).toEqual(['leaks', ['cni-cache-orphan', 'ip-reservation-leaked', 'netns-orphan'], 0]);
    // An entry that names its netns says whose it is: one naming a gone pin is a leak even then.
    expect(inSetup(5, 0, 2, '/var/run/netns/cni-gone')[1]).toEqual(['cni-cache-orphan']);
    // The reclaim refuses on what its audits could not verify, but not on records that are no finding of theirs.
    const blind = audit({ ...kubenetNode(0, 1), runtimeReachable: false });
    expect(refusingLines([held, held])).toEqual([]);
    expect(refusingLines([held, blind])).toEqual(blind.unverifiable);
  });
});
