import { ApiError, type Cluster } from '../../cluster/api.js';
import { addressAt } from '../../node/cni/host-local.js';
import type { Finding, ReleaseOutcome } from '../types.js';
import { blockObjectName } from './names.js';
import type { BlockAffinity, IpamBlock, IpamHandle } from './types.js';

// Releases Calico IPAM leaks through the CRDs, each write conditional on the resourceVersion it was decided on:
// a concurrent allocation makes the write fail (409) instead of being overwritten.
const GROUP = '/apis/crd.projectcalico.org/v1';

// Addresses first, then handles, then affinities: a removed node's block can lose its affinity once it is empty.
const ORDER = ['calico-ip-leaked', 'calico-handle-leaked', 'calico-affinity-orphan'];

export async function releaseCalico(cluster: Cluster, findings: Finding[]): Promise<ReleaseOutcome[]> {
  const outcomes: ReleaseOutcome[] = [];
  for (const f of [...findings].sort((a, b) => ORDER.indexOf(a.class) - ORDER.indexOf(b.class))) {
    try {
      if (f.class === 'calico-ip-leaked') outcomes.push(await releaseIp(cluster, f));
      else if (f.class === 'calico-handle-leaked') outcomes.push(await deleteHandle(cluster, f));
      else if (f.class === 'calico-affinity-orphan') outcomes.push(await releaseAffinity(cluster, f));
    } catch (e) {
      const conflict = e instanceof ApiError && (e.status === 409 || e.status === 404);
      outcomes.push({ finding: f, verdict: conflict ? 'changed' : 'failed', detail: (e as Error).message });
    }
  }
  return outcomes;
}

async function releaseIp(cluster: Cluster, f: Finding): Promise<ReleaseOutcome> {
  const path = `${GROUP}/ipamblocks/${f.evidence.block}`;
  const block = await cluster.get<IpamBlock>(path);
  const ordinal = Number(f.evidence.ordinal);
  if (block.metadata.resourceVersion !== f.evidence.resourceVersion) {
    return { finding: f, verdict: 'changed', detail: `block ${block.metadata.name} changed since the audit; not touched` };
  }
  const attrIndex = block.spec.allocations[ordinal];
  if (attrIndex === null || attrIndex === undefined) return { finding: f, verdict: 'gone', detail: `${f.evidence.ip} in block ${block.metadata.name} already released` };
  const handleId = block.spec.attributes[attrIndex]?.handle_id;
  const allocations = [...block.spec.allocations];
  allocations[ordinal] = null;
  const seq = { ...(block.spec.sequenceNumberForAllocation ?? {}) };
  delete seq[String(ordinal)];
  await cluster.request('PUT', path, {
    ...block,
    spec: { ...block.spec, allocations, unallocated: [...block.spec.unallocated, ordinal], sequenceNumberForAllocation: seq, sequenceNumber: (block.spec.sequenceNumber ?? 0) + 1 },
  });
  if (handleId) await decrementHandle(cluster, handleId, block.spec.cidr);
  return { finding: f, verdict: 'freed', detail: `released ${addressAt(block.spec.cidr, ordinal) ?? `ordinal ${ordinal}`} in ${block.spec.cidr}` };
}

async function decrementHandle(cluster: Cluster, handleId: string, cidr: string): Promise<void> {
  const path = `${GROUP}/ipamhandles/${handleId.toLowerCase()}`;
  let handle: IpamHandle;
  try {
    handle = await cluster.get<IpamHandle>(path);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return;
    throw e;
  }
  const block = { ...handle.spec.block, [cidr]: Math.max(0, (handle.spec.block[cidr] ?? 0) - 1) };
  if (block[cidr] === 0) delete block[cidr];
  if (Object.keys(block).length === 0) {
    await cluster.request('DELETE', path, { preconditions: { uid: handle.metadata.uid, resourceVersion: handle.metadata.resourceVersion } });
  } else {
    await cluster.request('PUT', path, { ...handle, spec: { ...handle.spec, block } });
  }
}

async function deleteHandle(cluster: Cluster, f: Finding): Promise<ReleaseOutcome> {
  await cluster.request('DELETE', `${GROUP}/ipamhandles/${f.evidence.handle}`, {
    preconditions: { uid: f.evidence.uid, resourceVersion: f.evidence.resourceVersion },
  });
  return { finding: f, verdict: 'freed', detail: `deleted handle ${f.evidence.handleID}` };
}

async function releaseAffinity(cluster: Cluster, f: Finding): Promise<ReleaseOutcome> {
  // The block as it is now: this reclaim may just have released its addresses.
  const block = await cluster.get<IpamBlock>(`${GROUP}/ipamblocks/${blockObjectName(String(f.evidence.cidr))}`).catch((e: unknown) => (e instanceof ApiError && e.status === 404 ? undefined : Promise.reject(e)));
  if (block?.spec.allocations.some((a) => a !== null && a !== undefined)) {
    return { finding: f, verdict: 'kept', detail: 'its block still has allocations: release those first (as calico-kube-controllers does)' };
  }
  const affinity = await cluster.get<BlockAffinity>(`${GROUP}/blockaffinities/${f.evidence.affinity}`);
  await cluster.request('DELETE', `${GROUP}/blockaffinities/${affinity.metadata.name}`, {
    preconditions: { uid: affinity.metadata.uid, resourceVersion: f.evidence.resourceVersion },
  });
  return { finding: f, verdict: 'freed', detail: `deleted block affinity ${affinity.metadata.name} of ${f.evidence.node}` };
}
