import { describe, expect, it } from 'vitest';
import { controlPlaneRefusal } from '../../../src/cluster/control-plane.js';
import type { Node, Pod } from '../../../src/cluster/types.js';

// Whether a run on a control-plane node would cut off the API it works through, or etcd's quorum: pure, over the
// node, the run's endpoint and the control plane's static pods (their mirror pods).
const node = (name: string, ip: string): Node => ({ metadata: { name }, spec: {}, status: { addresses: [{ type: 'InternalIP', address: ip }, { type: 'Hostname', address: name }] } });
const mirror = (component: string, on: string, ready = true): Pod => ({
  metadata: { name: `${component}-${on}`, namespace: 'kube-system', labels: { component }, annotations: { 'kubernetes.io/config.mirror': 'x' } },
  spec: { nodeName: on },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
const cp1 = node('cp-1', '10.0.0.11');

describe('a control-plane node the run stands on', () => {
  it('is refused when the run\'s API endpoint is that node, by address or by name', () => {
    expect(controlPlaneRefusal({ node: cp1, server: 'https://10.0.0.11:6443', staticPods: [] })).toMatch(/^the run reaches the Kubernetes API at https:\/\/10\.0\.0\.11:6443, which is cp-1 itself/);
    expect(controlPlaneRefusal({ node: cp1, server: 'https://cp-1:6443', staticPods: [] })).toBeDefined();
  });

  it('is refused when it holds the cluster\'s only kube-apiserver; on an HA control plane through another endpoint it goes ahead', () => {
    const single = [mirror('kube-apiserver', 'cp-1')];
    expect(controlPlaneRefusal({ node: cp1, server: 'https://lb:6443', staticPods: single })).toBe("cp-1 holds the cluster's only kube-apiserver (kube-apiserver-cp-1): the run would lose the API it works through");
    const ha = ['cp-1', 'cp-2', 'cp-3'].flatMap((n) => [mirror('kube-apiserver', n), mirror('etcd', n)]);
    expect(controlPlaneRefusal({ node: cp1, server: 'https://lb:6443', staticPods: ha })).toBeUndefined();
  });

  it('is refused when the other apiservers are not Ready: the last working one is this node\'s (issue 36 item 11)', () => {
    const pods = [mirror('kube-apiserver', 'cp-1'), mirror('kube-apiserver', 'cp-2', false), mirror('kube-apiserver', 'cp-3', false)];
    expect(controlPlaneRefusal({ node: cp1, server: 'https://lb:6443', staticPods: pods })).toBe("cp-1 holds the cluster's only Ready kube-apiserver (2 other(s), none Ready) (kube-apiserver-cp-1): the run would lose the API it works through");
    // One other Ready is enough.
    expect(controlPlaneRefusal({ node: cp1, server: 'https://lb:6443', staticPods: [...pods.slice(0, 2), mirror('kube-apiserver', 'cp-3')] })).toBeUndefined();
  });

  it('is refused when its etcd member is needed for quorum: two members, or a third not Ready', () => {
    const apis = ['cp-1', 'cp-2'].map((n) => mirror('kube-apiserver', n));
    expect(controlPlaneRefusal({ node: cp1, server: 'https://lb:6443', staticPods: [...apis, mirror('etcd', 'cp-1'), mirror('etcd', 'cp-2')] })).toMatch(/^cp-1 runs an etcd member that quorum needs \(2 member\(s\), quorum 2, 1 other\(s\) Ready\)/);
    const three = [mirror('etcd', 'cp-1'), mirror('etcd', 'cp-2'), mirror('etcd', 'cp-3', false)];
    expect(controlPlaneRefusal({ node: cp1, server: 'https://lb:6443', staticPods: [...apis, ...three] })).toMatch(/quorum 2, 1 other\(s\) Ready/);
  });

  it('leaves a worker, and a control plane whose apiserver and etcd are not static pods (cannot be seen, not the node\'s), alone', () => {
    expect(controlPlaneRefusal({ node: node('w-1', '10.0.0.21'), server: 'https://lb:6443', staticPods: [mirror('kube-apiserver', 'cp-1')] })).toBeUndefined();
    expect(controlPlaneRefusal({ node: cp1, server: 'https://lb:6443', staticPods: [] })).toBeUndefined();
  });
});
