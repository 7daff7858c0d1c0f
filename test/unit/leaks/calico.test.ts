import { describe, expect, it } from 'vitest';
import { auditNode } from '../../../src/leaks/audit.js';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { detectCalicoLeaks } from '../../../src/leaks/calico/detect.js';
import { calicoFindings } from '../../../src/leaks/calico/index.js';
import type { AllocationAttribute, BlockAffinity, CalicoView, IpamBlock, IpamHandle } from '../../../src/leaks/calico/types.js';
import { liveness } from '../../../src/leaks/liveness.js';
import { liveCalicoAllocation, stillAllocatedTo } from '../../../src/leaks/calico/proof.js';
import { releaseCalico } from '../../../src/leaks/calico/release.js';
import { parseRoute, routeFor } from '../../../src/node/cni/routes.js';
import { emptyState } from './state-builder.js';

// Calico IPAM as its CNI plugin writes it: a block's allocations[ordinal] indexes attributes, whose secondary names
// the pod, its namespace and its node (libcalico-go AllocationBlock, attributes of k8s-pod-network handles).
type Allocation = { ordinal: number; pod?: string; node?: string };

function block(cidr: string, owner: string | undefined, size: number, allocations: Allocation[]): IpamBlock {
  const slots: Array<number | null> = Array(size).fill(null);
  const attributes = allocations.map((a, i): AllocationAttribute => {
    slots[a.ordinal] = i;
    return { handle_id: `k8s-pod-network.${i}`, secondary: a.pod ? { namespace: 'demo', pod: a.pod, node: a.node ?? owner ?? '' } : { node: owner ?? '', type: 'vxlanTunnelAddress' } };
  });
  return {
    metadata: { name: cidr.replace(/[.:/]/g, '-'), resourceVersion: '1' },
    spec: { cidr, affinity: owner ? `host:${owner}` : null, allocations: slots, unallocated: slots.flatMap((s, i) => (s === null ? [i] : [])), attributes },
  };
}

const affinity = (node: string, cidr: string): BlockAffinity => ({ metadata: { name: `${node}-${cidr.replace(/[.:/]/g, '-')}`, resourceVersion: '1' }, spec: { node, cidr, state: 'confirmed' } });
const handle = (id: string, blocks: Record<string, number>): IpamHandle => ({ metadata: { name: id, uid: `uid-${id}`, resourceVersion: '1' }, spec: { handleID: id, block: blocks } });

function view(blocks: IpamBlock[], pods: Array<[ip: string, pod: string, node: string]>, extra: Partial<CalicoView> = {}): CalicoView {
  return { blocks, nodes: new Set(['a', 'b']), podIps: new Map(pods.map(([ip, pod, node]) => [ip, { pod: `demo/${pod}`, node }])), ...extra };
}

const classes = (v: CalicoView, node: string) => detectCalicoLeaks(v, node).node.map((f) => `${f.class} ${f.evidence.ip}`).sort();

describe('Calico IPAM', () => {
  it.each([
    ['IPv4', '10.244.1.0/26', 64, ['10.244.1.0', '10.244.1.1', '10.244.1.63']],
    ['IPv6', 'fd00:10:244:1::/122', 64, ['fd00:10:244:1::', 'fd00:10:244:1::1', 'fd00:10:244:1::3f']],
  ])('an %s block whose allocations live pods hold has no finding', (_, cidr, size, ips) => {
    const v = view([block(cidr, 'a', size, [{ ordinal: 0 }, { ordinal: 1, pod: 'p1' }, { ordinal: 63, pod: 'p63' }])], [[ips[1]!, 'p1', 'a'], [ips[2]!, 'p63', 'a']]);
    expect(classes(v, 'a')).toEqual([]);
  });

  it("counts the node's blocks as ranges (its tunnel address in use, a leaked one apart), not another node's", () => {
    const mine = block('10.244.1.0/30', 'a', 4, [{ ordinal: 0 }, { ordinal: 1, pod: 'p1' }, { ordinal: 2, pod: 'gone' }]);
    const v = view([mine, block('10.244.2.0/30', 'b', 4, [{ ordinal: 0 }])], [['10.244.1.1', 'p1', 'a']]);
    expect(detectCalicoLeaks(v, 'a').blocks).toEqual([
      { network: 'calico-ipam', cidr: '10.244.1.0/30', first: '10.244.1.0', last: '10.244.1.3', source: 'IPAMBlock 10-244-1-0-30', usable: 4, allocated: 3, inUse: 2, leaked: 1 },
    ]);
  });

  it('finds an IPv6 allocation whose pod is gone, at the right address', () => {
    const v = view([block('fd00:10:244:1::/122', 'a', 64, [{ ordinal: 10, pod: 'gone' }])], []);
    expect(classes(v, 'a')).toEqual(['calico-ip-leaked fd00:10:244:1::a']);
  });

  it.each([
    ['waits for its address on the node the allocation names: live, no finding', new Map([['demo/pulling', 'a']]), []],
    ['waits for its address on another node than the allocation names: leaked', new Map([['demo/pulling', 'b']]), ['calico-ip-leaked 10.244.1.7']],
    ['no longer exists (or holds another address): leaked', new Map(), ['calico-ip-leaked 10.244.1.7']],
  ])('an allocation whose pod %s', (_, waiting, found) => {
    // calico-ipam allocates when the sandbox is made; kubelet posts the address once the images are pulled.
    const v = view([block('10.244.1.0/26', 'a', 64, [{ ordinal: 7, pod: 'pulling', node: 'a' }])], [], { waiting });
    expect(classes(v, 'a')).toEqual(found);
  });

  it.each([
    // [pod demo/p on b uses 10.244.1.5 of a's block, which records ..., conflict?, the allocation of ordinal 5]
    ['it for that pod and node (a borrow)', false, { ordinal: 5, pod: 'p', node: 'b' }],
    ['it for that pod, no node named (a borrow)', false, { ordinal: 5, pod: 'p', node: '' }],
    ['it as free', true, undefined],
    ['it for another pod', true, { ordinal: 5, pod: 'other', node: 'b' }],
    ['it for that pod on another node', true, { ordinal: 5, pod: 'p', node: 'c' }],
  ])('a pod on b uses an address of a\'s block, which records %s: conflict %s', (_, conflict, allocation) => {
    const v = view([block('10.244.1.0/26', 'a', 64, allocation ? [allocation] : [])], [['10.244.1.5', 'p', 'b']]);
    const onB = detectCalicoLeaks(v, 'b').node.filter((f) => f.class === 'calico-ip-conflict');
    const onA = detectCalicoLeaks(v, 'a').node.filter((f) => f.class === 'calico-ip-conflict');
    expect(onB.length).toBe(conflict ? 1 : 0);
    expect(onA.length).toBe(conflict ? 1 : 0);
    if (conflict) expect(onB[0]!.evidence).toMatchObject({ ip: '10.244.1.5', pod: 'demo/p', podNode: 'b', blockNode: 'a' });
  });

  describe('a borrow, judged by the lender\'s routes (seed 004: its blackhole for the block swallows the borrower\'s traffic)', () => {
    // Pod p on b holds 10.244.1.5, borrowed from a's block, which records it for p on b.
    const v = view([block('10.244.1.0/26', 'a', 64, [{ ordinal: 5, pod: 'p', node: 'b' }])], [['10.244.1.5', 'p', 'b']]);
    const blackhole = parseRoute('blackhole 10.244.1.0/26 proto bird')!;
    it.each([
      ['the block\'s blackhole alone (no BGP /32 for the borrowed address)', [blackhole, parseRoute('default via 10.0.0.1 dev eth0')!], 1],
      ['the blackhole and bird\'s /32 to the borrower', [blackhole, parseRoute('10.244.1.5 via 10.0.0.2 dev eth0 proto bird')!], 0],
      ['no route for the block at all', [parseRoute('10.99.0.0/16 dev eth0 proto kernel scope link src 10.99.0.1')!], 0],
    ])('with %s: %s conflict on the lender', (_, routes, n) => {
      const found = detectCalicoLeaks(v, 'a', routes);
      expect(found.node.map((f) => [f.class, f.evidence.ip, f.evidence.podNode, f.evidence.borrowed])).toEqual(n ? [['calico-ip-conflict', '10.244.1.5', 'b', true]] : []);
      if (n) expect(found.node[0]!.message).toBe("10.244.1.5 of pod demo/p on b is borrowed from block 10.244.1.0/26, affine to a, whose route for it is `blackhole 10.244.1.0/26 proto bird`: a's pods cannot reach it");
      // The borrower's own routes do not decide it: its pod is reached by its own /32.
      expect(detectCalicoLeaks(v, 'b', [blackhole]).node).toEqual([]);
    });
    it('is unverifiable, not reachable, when the lender\'s routes could not be read', () => {
      const found = detectCalicoLeaks(v, 'a', undefined);
      expect(found.node).toEqual([]);
      expect(found.unverifiable).toEqual(["10.244.1.5 of block 10.244.1.0/26 is lent to pod demo/p on b, and a's routes could not be read: whether its pods reach it was not checked"]);
      expect(auditNode({ node: 'a', state: emptyState({ services: {} }), pods: [], calico: found }).verdict).toBe('unverifiable');
    });
  });

  it('reads the smoke pod\'s allocation as calico-ipam wrote it: its handle names a live sandbox; borrowed when the block is another node\'s', () => {
    const b = block('10.244.1.0/26', 'a', 64, [{ ordinal: 7, pod: 'smoke', node: 'a' }]);
    b.spec.attributes[0]!.handle_id = `k8s-pod-network.${'f'.repeat(64)}`;
    const live = (ids: string[]) => ({ ...liveness(emptyState({ services: {} }), []), sandboxIds: new Set(ids) });
    const v = view([b], []);
    expect(liveCalicoAllocation(v, live(['f'.repeat(64)]), 'a', 'demo/smoke', '10.244.1.7')).toEqual({ cidr: '10.244.1.0/26', blockNode: 'a', borrowed: false, handle: `k8s-pod-network.${'f'.repeat(64)}`, sandboxId: 'f'.repeat(64) });
    expect(liveCalicoAllocation(v, live(['f'.repeat(64)]), 'b', 'demo/smoke', '10.244.1.7')?.borrowed).toBe(true);
    // A sandbox the runtime does not know, another pod, an address the block records as free: no proof.
    expect(liveCalicoAllocation(v, live([]), 'a', 'demo/smoke', '10.244.1.7')).toBeUndefined();
    expect(liveCalicoAllocation(v, live(['f'.repeat(64)]), 'a', 'demo/other', '10.244.1.7')).toBeUndefined();
    expect(liveCalicoAllocation(v, live(['f'.repeat(64)]), 'a', 'demo/smoke', '10.244.1.8')).toBeUndefined();
    expect([stillAllocatedTo(v, 'demo/smoke', '10.244.1.7'), stillAllocatedTo(view([block('10.244.1.0/26', 'a', 64, [])], []), 'demo/smoke', '10.244.1.7')]).toEqual([true, false]);
  });

  it.each([
    ['as free', [], 1],
    ['for another pod', [{ ordinal: 5, pod: 'other', node: 'a' }], 1],
    ['for it', [{ ordinal: 5, pod: 'p', node: 'a' }], 0],
  ])('a pod on a uses an address of a\'s own block, which records it %s: %s conflict', (_, allocations, n) => {
    const v = view([block('10.244.1.0/26', 'a', 64, allocations)], [['10.244.1.5', 'p', 'a']]);
    const found = detectCalicoLeaks(v, 'a', []).node.filter((f) => f.class === 'calico-ip-conflict');
    expect(found.map((f) => f.message)).toEqual(n ? [expect.stringMatching(/^10\.244\.1\.5 of pod demo\/p on a lies in its node's block 10\.244\.1\.0\/26, which records it (as free|for demo\/other on a): calico-ipam may hand it to another pod$/)] : []);
    // A pod being deleted may have given its address back already: not judged.
    const terminating = view([block('10.244.1.0/26', 'a', 64, allocations)], []);
    terminating.podIps.set('10.244.1.5', { pod: 'demo/p', node: 'a', terminating: true });
    expect(detectCalicoLeaks(terminating, 'a', []).node.filter((f) => f.class === 'calico-ip-conflict')).toEqual([]);
  });

  it('finds the addresses a removed node\'s blocks still hold for gone pods cluster-wide, beside its affinity', () => {
    const gone = block('10.250.0.0/26', 'gone-node', 64, [{ ordinal: 3, pod: 'was-there', node: 'gone-node' }]);
    const v = view([gone], [], { whole: { affinities: [affinity('gone-node', '10.250.0.0/26')], handles: [handle('k8s-pod-network.0', { '10.250.0.0/26': 1 })] } });
    const found = detectCalicoLeaks(v, 'a');
    expect(found.node).toEqual([]);
    expect(found.cluster.map((f) => `${f.class} ${f.evidence.ip ?? f.evidence.node}`).sort()).toEqual(['calico-affinity-orphan gone-node', 'calico-ip-leaked 10.250.0.3']);
  });

  describe('the release of a block\'s leaked addresses, against the block as it is now', () => {
    // Three leaks judged in one block; the API holds the block as `now` has it and answers the write with `put`.
    function releaseApi(now: IpamBlock, put: () => unknown = () => ({})) {
      const writes: Array<{ method: string; path: string; body: any }> = [];
      const cluster = {
        async get(path: string) {
          if (path.includes('/ipamblocks/')) return structuredClone(now);
          throw new ApiError(404, 'NotFound', 'not found');
        },
        async request(method: string, path: string, body: unknown) {
          writes.push({ method, path, body });
          return put();
        },
      } as unknown as Cluster;
      return { cluster, writes };
    }
    const judged = block('10.244.1.0/26', 'a', 64, [{ ordinal: 1, pod: 'gone-1' }, { ordinal: 2, pod: 'gone-2' }, { ordinal: 3, pod: 'gone-3' }]);
    const leaks = detectCalicoLeaks(view([judged], []), 'a').node;

    it('frees every slot still holding what was judged in one write; one given back meanwhile is gone, one allocated anew is changed', async () => {
      const now = structuredClone(judged);
      now.spec.allocations[2] = null;
      now.spec.attributes[2] = { handle_id: 'k8s-pod-network.new', secondary: { namespace: 'demo', pod: 'newcomer', node: 'a' } };
      const { cluster, writes } = releaseApi(now);
      const outcomes = await releaseCalico(cluster, leaks);
      expect(outcomes.map((o) => `${o.finding.evidence.ip} ${o.verdict}`).sort()).toEqual(['10.244.1.1 freed', '10.244.1.2 gone', '10.244.1.3 changed']);
      const blockWrites = writes.filter((w) => w.path.includes('/ipamblocks/'));
      expect(blockWrites).toHaveLength(1);
      expect(blockWrites[0]!.body.spec.allocations.slice(0, 4)).toEqual([null, null, null, 2]);
    });

    it('a write the API refuses (409: calico-ipam wrote the block meanwhile) frees nothing and says so', async () => {
      const { cluster } = releaseApi(structuredClone(judged), () => Promise.reject(new ApiError(409, 'Conflict', 'the object has been modified')));
      const outcomes = await releaseCalico(cluster, leaks);
      expect(outcomes.map((o) => o.verdict)).toEqual(['changed', 'changed', 'changed']);
    });
  });

  it('keeps a conflict between two other nodes out of a third node\'s audit', () => {
    const v = view([block('10.244.1.0/26', 'a', 64, [])], [['10.244.1.5', 'p', 'b']], { nodes: new Set(['a', 'b', 'c']) });
    expect(classes(v, 'c')).toEqual([]);
  });

  it('reports removed nodes\' affinities and empty handles as cluster-wide, never as the node\'s', () => {
    const gone = block('10.250.0.0/26', 'gone-node', 64, []);
    const v = view([gone, block('10.244.1.0/26', 'a', 64, [{ ordinal: 1, pod: 'p1' }])], [['10.244.1.1', 'p1', 'a']], {
      whole: {
        affinities: [affinity('gone-node', '10.250.0.0/26'), affinity('a', '10.244.1.0/26')],
        handles: [handle('k8s-pod-network.0', { '10.244.1.0/26': 1 }), handle('k8s-pod-network.empty', {})],
      },
    });
    // A node's own view has no affinity or handle list: nothing cluster-wide is judged from it.
    expect(detectCalicoLeaks({ ...v, whole: undefined }, 'a').cluster).toEqual([]);
    const found = detectCalicoLeaks(v, 'a');
    expect(found.node).toEqual([]);
    expect(found.cluster.map((f) => f.class).sort()).toEqual(['calico-affinity-orphan', 'calico-handle-leaked']);
    const report = auditNode({ node: 'a', state: emptyState({ services: {} }), pods: [], calico: found });
    expect(report).toMatchObject({ verdict: 'clean', findings: [], clusterFindings: found.cluster });
  });
});

describe('reading Calico IPAM from the API', () => {
  type PodRow = [ip: string, pod: string, node: string, deleting?: boolean];
  /** A cluster serving Calico's group with these affinities, blocks and pods, and nodes a and b; what it was asked. */
  function calicoCluster(affinities: BlockAffinity[], blocks: IpamBlock[], pods: PodRow[]) {
    const asked: string[] = [];
    const podObject = ([ip, name, node, deleting]: PodRow) => ({ metadata: { namespace: 'demo', name, ...(deleting ? { deletionTimestamp: '2026-12-02T00:00:00Z' } : {}) }, spec: { nodeName: node, containers: [] }, status: { phase: ip ? 'Running' : 'Pending', podIP: ip || undefined } });
    const notFound = () => Promise.reject(new ApiError(404, 'NotFound', 'not found'));
    const cluster = {
      get: async (path: string) => {
        asked.push(path.split('&limit')[0]!.split('?limit')[0]!);
        const [where, query = ''] = path.split('?') as [string, string?];
        const list = (items: unknown[]) => ({ metadata: {}, items });
        if (where === '/apis/crd.projectcalico.org/v1') return { kind: 'APIResourceList' };
        if (where.endsWith('/blockaffinities')) return list(affinities);
        if (where.endsWith('/ipamblocks')) return list(blocks);
        if (where.endsWith('/ipamhandles')) return list([]);
        if (where.includes('/ipamblocks/')) return blocks.find((b) => b.metadata.name === where.split('/').pop()) ?? notFound();
        if (where === '/api/v1/nodes') return list(['a', 'b'].map((name) => ({ metadata: { name } })));
        if (where.startsWith('/api/v1/nodes/')) return ['a', 'b'].includes(where.split('/').pop()!) ? { metadata: { name: where.split('/').pop() } } : notFound();
        if (where === '/api/v1/pods') {
          const on = /spec\.nodeName%3D([^&]+)/.exec(query)?.[1];
          return list(pods.filter((p) => on === undefined || p[2] === on).map(podObject));
        }
        const byName = /^\/api\/v1\/namespaces\/demo\/pods\/(.+)$/.exec(where);
        const pod = byName && pods.find((p) => p[1] === byName[1]);
        return pod ? podObject(pod) : notFound();
      },
    } as unknown as Cluster;
    return { cluster, asked };
  }
  const affinityOf = (b: IpamBlock) => affinity(b.spec.affinity!.slice(5), b.spec.cidr);

  it('reads no cluster-wide list but the affinities, and nothing else where there is no affinity', async () => {
    const { cluster, asked } = calicoCluster([], [], [['10.244.1.5', 'p', 'b']]);
    expect(await calicoFindings(cluster, 'a')).toEqual({ node: [], blocks: [], cluster: [], unverifiable: [] });
    expect(asked.filter((p) => !p.includes('fieldSelector'))).toEqual(['/apis/crd.projectcalico.org/v1', '/apis/crd.projectcalico.org/v1/blockaffinities']);
  });

  it('a node\'s audit reads its own blocks and pods by name: a leaked IP, a conflict of its pod, a borrow that is none', async () => {
    const mine = block('10.244.1.0/26', 'a', 64, [{ ordinal: 3, pod: 'gone' }, { ordinal: 4, pod: 'lent', node: 'b' }]);
    const theirs = block('10.244.2.0/26', 'b', 64, []);
    const unrelated = Array.from({ length: 50 }, (_, i) => block(`10.245.${i}.0/26`, 'b', 64, [{ ordinal: 1, pod: `other-${i}` }]));
    const { cluster, asked } = calicoCluster([mine, theirs, ...unrelated].map(affinityOf), [mine, theirs, ...unrelated], [
      ['10.244.2.9', 'mislaid', 'a'],
      ['10.244.1.4', 'lent', 'b'],
      ...unrelated.map((_, i): PodRow => [`10.245.${i}.1`, `other-${i}`, 'b']),
    ]);
    const found = (await calicoFindings(cluster, 'a'))!;
    expect(found.node.map((f) => `${f.class} ${f.evidence.ip}`).sort()).toEqual(['calico-ip-conflict 10.244.2.9', 'calico-ip-leaked 10.244.1.3']);
    expect(found.cluster).toEqual([]);
    expect(asked).not.toContain('/apis/crd.projectcalico.org/v1/ipamblocks');
    expect(asked).not.toContain('/apis/crd.projectcalico.org/v1/ipamhandles');
    expect(asked).not.toContain('/api/v1/pods');
    expect(asked.filter((p) => p.includes('/ipamblocks/')).sort()).toEqual(['/apis/crd.projectcalico.org/v1/ipamblocks/10-244-1-0-26', '/apis/crd.projectcalico.org/v1/ipamblocks/10-244-2-0-26']);
    expect(asked.filter((p) => p.includes('/namespaces/demo/pods/')).sort()).toEqual(['/api/v1/namespaces/demo/pods/gone', '/api/v1/namespaces/demo/pods/lent']);
  });

  it('a pod with no address posted yet holds its allocation, in a node\'s view and in the whole one; a pod being deleted does not', async () => {
    const mine = block('10.244.1.0/26', 'a', 64, [{ ordinal: 7, pod: 'pulling', node: 'a' }, { ordinal: 8, pod: 'leaving', node: 'a' }]);
    const { cluster } = calicoCluster([affinityOf(mine)], [mine], [['', 'pulling', 'a'], ['', 'leaving', 'a', true]]);
    for (const scope of ['node', 'cluster'] as const) expect((await calicoFindings(cluster, 'a', scope))?.node.map((f) => f.evidence.ip)).toEqual(['10.244.1.8']);
  });

  it('the whole view (--cluster-wide) lists the pods after the blocks: a pod on another node in an empty block of this one is a conflict', async () => {
    const empty = block('10.244.1.0/26', 'a', 64, []);
    const { cluster, asked } = calicoCluster([affinityOf(empty)], [empty], [['10.244.1.5', 'p', 'b']]);
    expect((await calicoFindings(cluster, 'a'))?.node).toEqual([]);
    const findings = await calicoFindings(cluster, 'a', 'cluster');
    expect(findings!.node.map((f) => `${f.class} ${f.evidence.ip}`)).toEqual(['calico-ip-conflict 10.244.1.5']);
    expect(asked.lastIndexOf('/api/v1/pods')).toBeGreaterThan(asked.lastIndexOf('/apis/crd.projectcalico.org/v1/ipamblocks'));
  });
});

describe('the node\'s routes', () => {
  it('parses ip\'s lines and picks the longest prefix, as the kernel does', () => {
    const routes = ['default via 10.0.0.1 dev eth0', 'blackhole 10.233.64.0/26 proto bird', '10.233.64.3 dev cali1a2b3c4d5e6 scope link', 'unreachable 10.9.0.0/16', 'garbage line']
      .map(parseRoute)
      .filter((r) => r !== undefined);
    expect(routes.map((r) => [r.dest, r.type])).toEqual([['0.0.0.0/0', 'unicast'], ['10.233.64.0/26', 'blackhole'], ['10.233.64.3/32', 'unicast'], ['10.9.0.0/16', 'unreachable']]);
    expect(routeFor(routes, '10.233.64.3')?.text).toBe('10.233.64.3 dev cali1a2b3c4d5e6 scope link');
    expect(routeFor(routes, '10.233.64.4')?.type).toBe('blackhole');
    expect(routeFor(routes, '192.168.1.1')?.dest).toBe('0.0.0.0/0');
    expect(routeFor(routes.slice(1), '192.168.1.1')).toBeUndefined();
  });
});
