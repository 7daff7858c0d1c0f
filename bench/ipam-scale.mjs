// The cluster's IPAM as a big Calico cluster has it, for bench/scale.mjs: for every pod of the bench, its address in
// the block of its node (one /26 per API-only node, affine to it), its allocation in that block and its IPAMHandle, as
// Calico's CNI plugin writes them; and whereabouts IPPools of 5,000 allocations each (the size etcd's 1.5 MiB object
// limit allows), one per 5,000 pods. Written through the API, as Calico and whereabouts write them.
import { createHash } from 'node:crypto';

const CALICO = '/apis/crd.projectcalico.org/v1';
const WHEREABOUTS = '/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools';
export const POOL_SIZE = 5000;

const containerId = (pod) => createHash('sha256').update(pod).digest('hex');
/** The n-th node's block (n from 0): 10.96.0.0/16 holds 1,024 of them. */
export const blockCidr = (n) => `10.96.${(n * 64) >> 8}.${(n * 64) & 255}/26`;
export const blockName = (cidr) => cidr.replace(/[.:/]/g, '-');
/** The address of the j-th pod of the n-th node: its block's j-th. */
export const podAddress = (n, j) => `10.96.${(n * 64 + j) >> 8}.${(n * 64 + j) & 255}`;
export const poolRange = (p) => `10.${200 + (p >> 3)}.${(p & 7) * 32}.0/19`;

const tolerate = (status) => (e) => {
  if (e.status !== status) throw e;
};

/** Creates or replaces `path`'s object. */
async function put(cluster, collection, object) {
  const created = await cluster.request('POST', collection, object).catch(tolerate(409));
  if (created) return;
  const current = await cluster.get(`${collection}/${object.metadata.name}`);
  await cluster.request('PUT', `${collection}/${object.metadata.name}`, { ...object, metadata: { ...object.metadata, resourceVersion: current.metadata.resourceVersion } });
}

/** `count` tasks with `concurrency` in flight. */
async function pool(count, concurrency, task) {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await task(next++);
  }));
}

/**
 * Calico's objects for pods 0..pods-1 of the bench (pod i on node i % nodes, its j = floor(i / nodes)-th), handles
 * from `from` on; every node's affinity and block (rewritten with all its allocations); an empty block of `realNode`.
 */
/** A block's sequence number as calico-ipam starts it (the time it made the block, in nanoseconds). */
const SEQUENCE = 1795840175375163600;

export async function writeCalico(cluster, { nodes, pods, from, podName, nodeName, namespace, realNode }) {
  const block = (n) => {
    const cidr = blockCidr(n);
    const count = Math.floor(pods / nodes) + (n < pods % nodes ? 1 : 0);
    const allocations = Array(64).fill(null);
    const attributes = [];
    for (let j = 0; j < count; j++) {
      const pod = podName(j * nodes + n);
      allocations[j] = attributes.length;
      attributes.push({ handle_id: `k8s-pod-network.${containerId(pod)}`, secondary: { namespace, node: nodeName(n), pod, timestamp: '2026-11-27 07:00:00 +0000 UTC' } });
    }
    // As calico-ipam 3.28 writes a block (seen on the bed's Calico nodes): a sequence number per ordinal it handed out.
    const sequenceNumberForAllocation = Object.fromEntries(allocations.flatMap((a, i) => (a === null ? [] : [[String(i), SEQUENCE]])));
    return { cidr, allocations, attributes, unallocated: allocations.flatMap((a, i) => (a === null ? [i] : [])), sequenceNumberForAllocation };
  };
  const affinity = (node, cidr) => ({ apiVersion: 'crd.projectcalico.org/v1', kind: 'BlockAffinity', metadata: { name: `${node}-${blockName(cidr)}` }, spec: { state: 'confirmed', node, cidr, deleted: 'false' } });
  const ipamBlock = (node, b) => ({ apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock', metadata: { name: blockName(b.cidr) }, spec: { sequenceNumberForAllocation: {}, ...b, affinity: `host:${node}`, strictAffinity: false, deleted: false, sequenceNumber: SEQUENCE } });
  await pool(nodes, 16, async (n) => {
    const b = block(n);
    await cluster.request('POST', `${CALICO}/blockaffinities`, affinity(nodeName(n), b.cidr)).catch(tolerate(409));
    await put(cluster, `${CALICO}/ipamblocks`, ipamBlock(nodeName(n), b));
  });
  const own = { cidr: blockCidr(nodes), allocations: Array(64).fill(null), attributes: [], unallocated: [...Array(64).keys()] };
  await cluster.request('POST', `${CALICO}/blockaffinities`, affinity(realNode, own.cidr)).catch(tolerate(409));
  await put(cluster, `${CALICO}/ipamblocks`, ipamBlock(realNode, own));
  await pool(pods - from, 32, async (k) => {
    const i = from + k;
    const n = i % nodes;
    const handle = `k8s-pod-network.${containerId(podName(i))}`;
    await cluster.request('POST', `${CALICO}/ipamhandles`, { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMHandle', metadata: { name: handle }, spec: { handleID: handle, block: { [blockCidr(n)]: 1 }, deleted: false } }).catch(tolerate(409));
  });
}

/** whereabouts pools for pods 0..pods-1: pool p holds pods p*POOL_SIZE.., at offsets from 1. */
export async function writeWhereabouts(cluster, { pods, podName, namespace }) {
  await pool(Math.ceil(pods / POOL_SIZE), 4, async (p) => {
    const allocations = {};
    for (let k = 0; k < POOL_SIZE && p * POOL_SIZE + k < pods; k++) {
      const pod = podName(p * POOL_SIZE + k);
      allocations[String(k + 1)] = { id: containerId(pod), podref: `${namespace}/${pod}`, ifname: 'net1' };
    }
    await put(cluster, WHEREABOUTS, { apiVersion: 'whereabouts.cni.cncf.io/v1alpha1', kind: 'IPPool', metadata: { name: blockName(poolRange(p)), namespace: 'kube-system' }, spec: { range: poolRange(p), allocations } });
  });
}

/** The etcd key prefixes of what this module wrote (and only that), to delete straight from etcd as the pods are. */
export const ipamKeyPrefixes = (realNode) => [
  '/registry/crd.projectcalico.org/ipamhandles/k8s-pod-network.',
  '/registry/crd.projectcalico.org/ipamblocks/10-96-',
  '/registry/crd.projectcalico.org/blockaffinities/kwok-',
  `/registry/crd.projectcalico.org/blockaffinities/${realNode}-10-96-`,
  '/registry/whereabouts.cni.cncf.io/ippools/kube-system/10-2',
];

/**
 * The handles of the bed's own Calico pods (named by the blocks of its IPPool, 10.233.64.0/18), as objects to create
 * again: the cleanup's delete of the handle prefix takes them with the bench's, whose names have the same shape.
 */
export async function bedHandles(cluster) {
  const blocks = (await cluster.get(`${CALICO}/ipamblocks`)).items.filter((b) => b.spec.cidr.startsWith('10.233.'));
  const names = [...new Set(blocks.flatMap((b) => (b.spec.attributes ?? []).map((a) => a.handle_id).filter(Boolean)))];
  const handles = await Promise.all(names.map((n) => cluster.get(`${CALICO}/ipamhandles/${n}`).catch(() => undefined)));
  return handles.filter(Boolean).map((h) => ({ apiVersion: h.apiVersion, kind: h.kind, metadata: { name: h.metadata.name, labels: h.metadata.labels }, spec: h.spec }));
}

/** Creates again the handles bedHandles kept. */
export async function putBackHandles(cluster, handles) {
  for (const h of handles) await cluster.request('POST', `${CALICO}/ipamhandles`, h).catch(tolerate(409));
}
