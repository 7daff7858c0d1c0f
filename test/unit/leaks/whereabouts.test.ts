import { describe, expect, it } from 'vitest';
import { auditNode } from '../../../src/leaks/audit.js';
import { liveness } from '../../../src/leaks/liveness.js';
import { detectWhereaboutsLeaks, liveAllocation } from '../../../src/leaks/whereabouts/detect.js';
import { allocationsOf } from '../../../src/leaks/whereabouts/read.js';
import { poolRange, whereaboutsRanges } from '../../../src/leaks/whereabouts/ranges.js';
import type { IpPool, WhereaboutsView } from '../../../src/leaks/whereabouts/types.js';
import type { NodeState } from '../../../src/node/state/types.js';
import { emptyState, id, podOn } from './state-builder.js';

// whereabouts as v0.9.2 writes it: one IPPool per range (named after it), spec.allocations keyed by the offset from
// the range's network address, each naming the sandbox (id) and the pod (podref) it was made for.
const RANGE = '10.210.0.0/16';
const pool = (allocations: Record<string, [container: number, podref: string]>, range = RANGE): IpPool => ({
  metadata: { name: range.replace(/[:/]/g, '-'), namespace: 'kube-system', resourceVersion: '7' },
  spec: { range, allocations: Object.fromEntries(Object.entries(allocations).map(([o, [c, podref]]) => [o, { id: id(c), podref, ifname: 'eth0' }])) },
});
const file = (name: string, content: string) => ({ path: `/etc/cni/net.d/${name}`, name, size: content.length, content, mtime: 0 });
const conf = (ipam: object, name = '00-wb.conflist') => file(name, JSON.stringify({ cniVersion: '0.4.0', name: 'wb', plugins: [{ type: 'bridge', ipam }] }));
const sandbox = (n: number, name: string) => ({ id: id(n), ready: true, podUid: `uid-${name}`, namespace: 'demo', name, pid: 100 + n, createdAt: '' });
const view = (pools: IpPool[], pods: string[]): WhereaboutsView => ({ ranges: [RANGE], allocations: allocationsOf(pools, [RANGE]), pods: new Set(pods) });
const found = (state: NodeState, v: WhereaboutsView, podsHere = [podOn('p1', '10.210.0.11')]) => {
  const r = detectWhereaboutsLeaks(v, liveness(state, podsHere), podsHere);
  return { node: r.node.map((f) => `${f.evidence.ip} ${f.evidence.pod}`), cluster: r.cluster.map((f) => `${f.evidence.ip} ${f.evidence.pod}`) };
};

describe('whereabouts ranges and pools', () => {
  it.each([
    ['10.210.0.0/16', '10.210.0.0/16'],
    ['10.210.3.7/16', '10.210.0.0/16'],
    ['10.210.0.5-10.210.0.50/24', '10.210.0.0/24'],
    ['fd00:10::7/120', 'fd00:10::/120'],
    ['not-a-range', undefined],
  ])('the pool of range %s is %s', (range, want) => {
    expect(poolRange(range)).toBe(want);
  });

  it('reads the ranges of every whereabouts network on the node (range and ipRanges), none of other IPAMs', () => {
    const state = emptyState({
      cniConfFiles: [
        conf({ type: 'whereabouts', range: '10.210.9.9/16', ipRanges: [{ range: 'fd00:10::/120' }] }),
        conf({ type: 'host-local', ranges: [[{ subnet: '10.99.0.0/24' }]] }, '10-hl.conflist'),
        file('99-broken.conf', '{'),
      ],
    });
    expect(whereaboutsRanges(state)).toEqual(['10.210.0.0/16', 'fd00:10::/120']);
  });

  it('places each allocation at its offset from the range, and skips pools of other ranges', () => {
    const all = allocationsOf([pool({ '11': [1, 'demo/p1'], '256': [2, 'demo/p2'] }), pool({ '1': [3, 'demo/p3'] }, '10.211.0.0/16')], [RANGE]);
    expect(all.map((a) => [a.ip, a.podRef, a.pool])).toEqual([
      ['10.210.0.11', 'demo/p1', '10.210.0.0-16'],
      ['10.210.1.0', 'demo/p2', '10.210.0.0-16'],
    ]);
  });
});

describe('whereabouts leaks', () => {
  const live = emptyState({ sandboxes: [sandbox(1, 'p1')] });

  it('an allocation held by a live sandbox of its pod is no finding', () => {
    expect(found(live, view([pool({ '11': [1, 'demo/p1'] })], ['demo/p1']))).toEqual({ node: [], cluster: [] });
  });

  it("an allocation of a pod bound here whose sandbox is gone is this node's leak (the pod runs in another sandbox)", () => {
    const v = view([pool({ '11': [1, 'demo/p1'], '12': [9, 'demo/p1'] })], ['demo/p1']);
    expect(found(live, v)).toEqual({ node: ['10.210.0.12 demo/p1'], cluster: [] });
  });

  it("an allocation of a pod that no longer exists is the cluster's: no node is known to own it", () => {
    const v = view([pool({ '11': [1, 'demo/p1'], '20': [8, 'demo/gone'] })], ['demo/p1']);
    expect(found(live, v)).toEqual({ node: [], cluster: ['10.210.0.20 demo/gone'] });
  });

  it("a gone pod's sandbox left stopped here holds its allocation no more; one that runs still does", () => {
    const v = view([pool({ '11': [1, 'demo/p1'], '20': [8, 'demo/gone'] })], ['demo/p1']);
    const left = (ready: boolean) => emptyState({ sandboxes: [sandbox(1, 'p1'), { ...sandbox(8, 'gone'), ready, pid: ready ? 108 : 0 }] });
    expect([found(left(false), v).cluster, found(left(true), v).cluster]).toEqual([['10.210.0.20 demo/gone'], []]);
  });

  it("an allocation of a pod on another node is not judged (its sandboxes are that node's)", () => {
    expect(found(live, view([pool({ '11': [1, 'demo/p1'], '30': [7, 'demo/elsewhere'] })], ['demo/p1', 'demo/elsewhere']))).toEqual({ node: [], cluster: [] });
  });

  it('a pod bound here with no IP yet may be in its ADD: its allocation is not judged', () => {
    const v = view([pool({ '40': [5, 'demo/starting'] })], ['demo/starting']);
    expect(found(emptyState(), v, [podOn('starting', undefined)])).toEqual({ node: [], cluster: [] });
  });

  it("a pod bound here that failed (it never restarts, so no sandbox takes its entry over) is the node's leak, IP or none", () => {
    const v = view([pool({ '40': [5, 'demo/job'] })], ['demo/job']);
    const failed = { ...podOn('job', undefined), status: { phase: 'Failed' } };
    expect(found(emptyState(), v, [failed])).toEqual({ node: ['10.210.0.40 demo/job'], cluster: [] });
  });

  it('an allocation that names no pod (older whereabouts) is judged by its container: live here, or left alone as "cannot tell", never a leak', () => {
    const noPod = (allocations: Record<string, number>): IpPool => ({ ...pool({}), spec: { range: RANGE, allocations: Object.fromEntries(Object.entries(allocations).map(([o, c]) => [o, { id: id(c) }])) } });
    const v = view([noPod({ '11': 1, '50': 50 })], ['demo/p1']);
    const r = detectWhereaboutsLeaks(v, liveness(live, [podOn('p1', '10.210.0.11')]), [podOn('p1', '10.210.0.11')]);
    // Its undefined pod is no pod "that no longer exists": a live container of another node keeps its address.
    expect([r.node, r.cluster]).toEqual([[], []]);
    expect(r.cannotTell).toEqual([`10.210.0.50 (whereabouts pool kube-system/10.210.0.0-16, container ${id(50).slice(0, 12)})`]);
    const state = emptyState({ sandboxes: [sandbox(1, 'p1')], cniConfFiles: [conf({ type: 'whereabouts', range: RANGE })] });
    const audit = auditNode({ node: 'n', state, pods: [podOn('p1', '10.210.0.11')], whereabouts: v });
    expect(audit.clusterFindings).toEqual([]);
    expect(audit.leftAlone.join('\n')).toContain('1 whereabouts allocation(s) that name no pod and whose container is not this node\'s: cannot tell whose, left alone: 10.210.0.50');
  });

  it('a runtime that did not answer judges nothing dead on the node', () => {
    const v = view([pool({ '12': [9, 'demo/p1'] })], ['demo/p1']);
    expect(found(emptyState({ runtimeReachable: false }), v)).toEqual({ node: [], cluster: [] });
  });

  it("counts against the node in the audit's verdict; the cluster's are reported only", () => {
    const checkpoints = [{ path: `/var/lib/cri-dockerd/sandbox/${id(1)}`, kind: 'cri-dockerd' as const, sandboxId: id(1), hostNetwork: false, mtime: 0 }];
    const state = emptyState({ sandboxes: [sandbox(1, 'p1')], checkpoints, cniConfFiles: [conf({ type: 'whereabouts', range: RANGE })] });
    const pods = [podOn('p1', '10.210.0.11')];
    const leaked = auditNode({ node: 'n', state, pods, whereabouts: view([pool({ '11': [1, 'demo/p1'], '12': [9, 'demo/p1'] })], ['demo/p1']) });
    expect([leaked.verdict, leaked.findings.map((f) => f.class)]).toEqual(['leaks', ['whereabouts-ip-leaked']]);
    const gone = auditNode({ node: 'n', state, pods, whereabouts: view([pool({ '11': [1, 'demo/p1'], '20': [8, 'demo/gone'] })], ['demo/p1']) });
    expect([gone.verdict, gone.clusterFindings.map((f) => f.class)]).toEqual(['clean', ['whereabouts-ip-leaked']]);
  });

  it("the smoke pod's proof: its IP allocated to it and held by a live sandbox", () => {
    const v = view([pool({ '11': [1, 'demo/p1'], '12': [9, 'demo/p1'] })], ['demo/p1']);
    expect(liveAllocation(v, liveness(live, []), 'demo/p1', '10.210.0.11')?.containerId).toBe(id(1));
    expect(liveAllocation(v, liveness(live, []), 'demo/p1', '10.210.0.12')).toBeUndefined();
    expect(liveAllocation(v, liveness(live, []), 'demo/other', '10.210.0.11')).toBeUndefined();
  });
});
