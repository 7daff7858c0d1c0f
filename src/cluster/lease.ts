import { RunbookError } from '../runbook/errors.js';
import { isConflict, isNotFound, type Cluster } from './api.js';
import type { Lease } from './types.js';

// A per-node Lease (coordination.k8s.io/v1): no two runs act on one node. It also carries the run's journal, so a
// killed run can be resumed from any machine that can reach the API.
export const LEASE_PREFIX = 'node-maint-';
export const JOURNAL_ANNOTATION = 'node-maint.io/journal';

export interface LeaseOptions {
  namespace: string;
  node: string;
  holder: string;
  durationSeconds: number;
}

const leaseName = (node: string) => `${LEASE_PREFIX}${node}`;
const leasePath = (ns: string, name?: string) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases${name ? `/${name}` : ''}`;

export async function readLease(cluster: Cluster, namespace: string, node: string): Promise<Lease | undefined> {
  try {
    return await cluster.get<Lease>(leasePath(namespace, leaseName(node)));
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** Whether someone else holds the lease now; an expired lease (its holder died) is free. */
export function heldByOther(lease: Lease | undefined, holder: string, now = Date.now()): string | undefined {
  const current = lease?.spec.holderIdentity;
  if (!lease || !current || current === holder) return undefined;
  const renewed = Date.parse(lease.spec.renewTime ?? lease.spec.acquireTime ?? '');
  const expires = renewed + (lease.spec.leaseDurationSeconds ?? 0) * 1000;
  return Number.isFinite(expires) && expires > now ? current : undefined;
}

const microTime = (d = new Date()) => d.toISOString().replace('Z', '000Z');

/** Takes the lease (creating it if needed), or throws `locked` naming the holder. */
export async function acquireLease(cluster: Cluster, options: LeaseOptions): Promise<Lease> {
  const existing = await readLease(cluster, options.namespace, options.node);
  const other = heldByOther(existing, options.holder);
  if (other) {
    throw new RunbookError('locked', `node ${options.node} is being maintained by ${other} (Lease ${options.namespace}/${leaseName(options.node)})`);
  }
  const now = microTime();
  const spec = {
    holderIdentity: options.holder,
    leaseDurationSeconds: options.durationSeconds,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: (existing?.spec.leaseTransitions ?? 0) + (existing ? 1 : 0),
  };
  try {
    if (!existing) {
      return await cluster.request<Lease>('POST', leasePath(options.namespace), {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: leaseName(options.node), namespace: options.namespace, labels: { 'app.kubernetes.io/managed-by': 'node-maint' } },
        spec,
      });
    }
    return await cluster.request<Lease>('PUT', leasePath(options.namespace, leaseName(options.node)), { ...existing, spec });
  } catch (e) {
    // Someone took it between our read and write.
    if (isConflict(e)) throw new RunbookError('locked', `node ${options.node}: another run took the Lease first`, { cause: e });
    throw e;
  }
}

/** Renews the lease and, when given, stores the journal in it; fails if the lease was lost to another holder. */
export async function renewLease(cluster: Cluster, options: LeaseOptions, journal?: string): Promise<Lease> {
  const lease = await readLease(cluster, options.namespace, options.node);
  if (!lease || lease.spec.holderIdentity !== options.holder) {
    throw new RunbookError('locked', `node ${options.node}: the Lease was lost to ${lease?.spec.holderIdentity ?? 'nobody (deleted)'}`);
  }
  const annotations = { ...lease.metadata.annotations, ...(journal !== undefined ? { [JOURNAL_ANNOTATION]: journal } : {}) };
  return cluster.request<Lease>('PUT', leasePath(options.namespace, leaseName(options.node)), {
    ...lease,
    metadata: { ...lease.metadata, annotations },
    spec: { ...lease.spec, renewTime: microTime() },
  });
}

/** Gives the lease up; the journal stays on it as the record of the last run. */
export async function releaseLease(cluster: Cluster, options: LeaseOptions): Promise<void> {
  const lease = await readLease(cluster, options.namespace, options.node);
  if (!lease || lease.spec.holderIdentity !== options.holder) return;
  await cluster.request<Lease>('PUT', leasePath(options.namespace, leaseName(options.node)), {
    ...lease,
    spec: { ...lease.spec, holderIdentity: null, acquireTime: null, renewTime: microTime() },
  });
}
