import { ApiError, type Cluster } from '../../cluster/api.js';
import { addressAt } from '../../node/cni/host-local.js';
import type { Finding, ReleaseOutcome } from '../types.js';
import { allocatedPod } from './blocks.js';
import { blockObjectName, CALICO_GROUP, handleObjectName } from './names.js';
import type { BlockAffinity, IpamBlock, IpamHandle } from './types.js';

// Releases Calico IPAM leaks through the CRDs, each write conditional on the object as last read (resourceVersion):
// a concurrent allocation makes the write fail (409) instead of being overwritten.

export async function releaseCalico(cluster: Cluster, findings: Finding[]): Promise<ReleaseOutcome[]> {
  const outcomes: ReleaseOutcome[] = [];
  const ips = findings.filter((f) => f.class === 'calico-ip-leaked');
  for (const block of new Set(ips.map((f) => String(f.evidence.block)))) {
    const mine = ips.filter((f) => f.evidence.block === block);
    outcomes.push(...(await releaseIps(cluster, block, mine).catch((e: unknown) => mine.map((f) => failedOutcome(f, e)))));
  }
  // Then handles, then affinities: a removed node's block can lose its affinity once its addresses are released.
  for (const f of [...findings.filter((x) => x.class === 'calico-handle-leaked'), ...findings.filter((x) => x.class === 'calico-affinity-orphan')]) {
    try {
      outcomes.push(f.class === 'calico-handle-leaked' ? await deleteHandle(cluster, f) : await releaseAffinity(cluster, f));
    } catch (e) {
      outcomes.push(failedOutcome(f, e));
    }
  }
  return outcomes;
}

function failedOutcome(f: Finding, e: unknown): ReleaseOutcome {
  const conflict = e instanceof ApiError && (e.status === 409 || e.status === 404);
  return { finding: f, verdict: conflict ? 'changed' : 'failed', detail: (e as Error).message };
}

/**
 * A block's leaked addresses in one write, as calico-ipam releases several: each slot only while it still holds the
 * allocation the audit judged (same handle, pod and sequence number: calico-ipam frees a slot before it reuses it),
 * the write conditional on the block as just read.
 */
async function releaseIps(cluster: Cluster, name: string, findings: Finding[]): Promise<ReleaseOutcome[]> {
  const path = `${CALICO_GROUP}/ipamblocks/${name}`;
  const block = await cluster.get<IpamBlock>(path);
  const outcomes: ReleaseOutcome[] = [];
  const freeing: Array<{ f: Finding; ordinal: number; handle?: string }> = [];
  for (const f of findings) {
    const ordinal = Number(f.evidence.ordinal);
    const index = block.spec.allocations[ordinal];
    const attribute = index === null || index === undefined ? undefined : block.spec.attributes[index];
    const sequence = block.spec.sequenceNumberForAllocation?.[String(ordinal)];
    if (!attribute) outcomes.push({ finding: f, verdict: 'gone', detail: `${f.evidence.ip} in block ${block.spec.cidr} already released since the audit` });
    else if (attribute.handle_id !== f.evidence.handle || allocatedPod(attribute) !== f.evidence.pod || (f.evidence.sequence !== undefined && sequence !== f.evidence.sequence)) {
      outcomes.push({ finding: f, verdict: 'changed', detail: `${f.evidence.ip} in block ${block.spec.cidr} is allocated anew since the audit (${allocatedPod(attribute) ?? attribute.handle_id}); not touched` });
    } else freeing.push({ f, ordinal, handle: attribute.handle_id });
  }
  if (freeing.length === 0) return outcomes;
  const allocations = [...block.spec.allocations];
  const seq = { ...(block.spec.sequenceNumberForAllocation ?? {}) };
  for (const { ordinal } of freeing) {
    allocations[ordinal] = null;
    delete seq[String(ordinal)];
  }
  await cluster.request('PUT', path, {
    ...block,
    spec: { ...block.spec, allocations, unallocated: [...block.spec.unallocated, ...freeing.map((x) => x.ordinal)], sequenceNumberForAllocation: seq, sequenceNumber: (block.spec.sequenceNumber ?? 0) + 1 },
  });
  for (const { handle } of freeing) if (handle) await decrementHandle(cluster, handle, block.spec.cidr);
  return [...outcomes, ...freeing.map(({ f, ordinal }) => ({ finding: f, verdict: 'freed' as const, detail: `released ${addressAt(block.spec.cidr, ordinal) ?? `ordinal ${ordinal}`} in ${block.spec.cidr}` }))];
}

async function decrementHandle(cluster: Cluster, handleId: string, cidr: string): Promise<void> {
  const path = `${CALICO_GROUP}/ipamhandles/${handleObjectName(handleId)}`;
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
  await cluster.request('DELETE', `${CALICO_GROUP}/ipamhandles/${f.evidence.handle}`, {
    preconditions: { uid: f.evidence.uid, resourceVersion: f.evidence.resourceVersion },
  });
  return { finding: f, verdict: 'freed', detail: `deleted handle ${f.evidence.handleID}` };
}

async function releaseAffinity(cluster: Cluster, f: Finding): Promise<ReleaseOutcome> {
  // The block as it is now: this reclaim may just have released its addresses.
  const block = await cluster.get<IpamBlock>(`${CALICO_GROUP}/ipamblocks/${blockObjectName(String(f.evidence.cidr))}`).catch((e: unknown) => (e instanceof ApiError && e.status === 404 ? undefined : Promise.reject(e)));
  if (block?.spec.allocations.some((a) => a !== null && a !== undefined)) {
    return { finding: f, verdict: 'kept', detail: 'its block still has allocations: release those first (as calico-kube-controllers does)' };
  }
  const affinity = await cluster.get<BlockAffinity>(`${CALICO_GROUP}/blockaffinities/${f.evidence.affinity}`);
  await cluster.request('DELETE', `${CALICO_GROUP}/blockaffinities/${affinity.metadata.name}`, {
    preconditions: { uid: affinity.metadata.uid, resourceVersion: f.evidence.resourceVersion },
  });
  return { finding: f, verdict: 'freed', detail: `deleted block affinity ${affinity.metadata.name} of ${f.evidence.node}` };
}
