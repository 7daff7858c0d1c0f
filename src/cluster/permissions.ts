import { RunbookError } from '../errors.js';
import type { Cluster } from './api.js';

// What a run does with the API, asked of the API server before anything (SelfSubjectAccessReview, which every
// authenticated user may send). A service account without one of these used to fail mid-run: an eviction refused
// after the cordon, a Lease update refused after the drain. runbooks/rbac.yaml grants exactly these.
export interface Permission {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  /** One object by name (a rule with resourceNames). */
  name?: string;
  /** Namespaced permissions in one namespace; absent: cluster-wide (or all namespaces). */
  namespace?: string;
  /** Needed only by a run that changes things (not by --dry-run). */
  write?: boolean;
}

/** Calico's IPAM records, read by a node's audit on a cluster that has them: every affinity, the node's blocks by name. */
export const CALICO_PERMISSIONS: Permission[] = [
  { verb: 'list', group: 'crd.projectcalico.org', resource: 'blockaffinities' },
  { verb: 'get', group: 'crd.projectcalico.org', resource: 'ipamblocks' },
];

/** whereabouts' pools, read by the proof and the audit on a cluster that has them. */
export const WHEREABOUTS_PERMISSIONS: Permission[] = [{ verb: 'list', group: 'whereabouts.cni.cncf.io', resource: 'ippools' }];

/**
 * What an upgrade (and its rollback) asks of the API; leases live in `namespace`, the smoke pod and its events in
 * `smokeNamespace` (the same unless given);
 * Calico's and whereabouts' records where the cluster serves them.
 */
export function upgradePermissions(namespace: string, calico: boolean, whereabouts = false, smokeNamespace = namespace): Permission[] {
  return [
    ...(calico ? CALICO_PERMISSIONS : []),
    ...(whereabouts ? WHEREABOUTS_PERMISSIONS : []),
    { verb: 'get', group: '', resource: 'nodes' },
    { verb: 'list', group: '', resource: 'nodes' },
    { verb: 'patch', group: '', resource: 'nodes', write: true },
    { verb: 'list', group: '', resource: 'pods' },
    { verb: 'get', group: '', resource: 'pods' },
    { verb: 'create', group: '', resource: 'pods', subresource: 'eviction', write: true },
    { verb: 'list', group: 'policy', resource: 'poddisruptionbudgets' },
    { verb: 'watch', group: 'policy', resource: 'poddisruptionbudgets' },
    { verb: 'get', group: 'apps', resource: 'daemonsets' },
    // the controllers of the pods to evict, for a template that pins them to the node
    { verb: 'get', group: 'apps', resource: 'replicasets' },
    { verb: 'get', group: 'apps', resource: 'statefulsets' },
    { verb: 'get', group: '', resource: 'replicationcontrollers' },
    { verb: 'get', group: 'batch', resource: 'jobs' },
    { verb: 'create', group: '', resource: 'events', namespace: 'default', write: true },
    { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace },
    { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace, write: true },
    { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace, write: true },
    { verb: 'create', group: '', resource: 'pods', namespace: smokeNamespace, write: true },
    { verb: 'delete', group: '', resource: 'pods', namespace: smokeNamespace, write: true },
    { verb: 'list', group: '', resource: 'events', namespace: smokeNamespace },
  ];
}

/** What `--cluster-wide` reads of Calico on top: every block, handle and node (affinities of removed nodes, empty handles). */
const CALICO_CLUSTER_PERMISSIONS: Permission[] = [
  { verb: 'list', group: 'crd.projectcalico.org', resource: 'ipamblocks' },
  { verb: 'list', group: 'crd.projectcalico.org', resource: 'ipamhandles' },
  { verb: 'list', group: '', resource: 'nodes' },
];

/** The reclaim's reads of a leaked whereabouts allocation's pool and reservation, for its age and its release. */
const WHEREABOUTS_AGES: Permission[] = ['ippools', 'overlappingrangeipreservations'].map((resource) => ({ verb: 'get', group: 'whereabouts.cni.cncf.io', resource }));

/** The objects whose age holds a Calico release back for --grace. */
const CALICO_AGES: Permission[] = [
  { verb: 'get', group: 'crd.projectcalico.org', resource: 'ipamhandles' },
  { verb: 'get', group: 'crd.projectcalico.org', resource: 'blockaffinities' },
];

/**
 * What audit-node --reclaim asks of the API: the audit's reads, the node's Lease (it holds it as a run does), and the
 * writes that release Calico's and whereabouts' records where the cluster serves them. A run never needs those writes:
 * runbooks/rbac.yaml grants them to a ServiceAccount of reclaim's own. On Calico a node's read gets the pods its blocks
 * name by name (a pod on another node, a borrower); `--cluster-wide` lists the rest.
 */
export function reclaimPermissions(namespace: string, calico: boolean, whereabouts: boolean, scope: 'node' | 'cluster' = 'node'): Permission[] {
  const writes = (group: string, resources: string[], verbs: string[]) => resources.flatMap((resource) => verbs.map((verb) => ({ verb, group, resource, write: true })));
  return [
    ...(calico ? [...CALICO_PERMISSIONS, { verb: 'get', group: '', resource: 'pods' }, ...CALICO_AGES, ...(scope === 'cluster' ? CALICO_CLUSTER_PERMISSIONS : []), ...writes('crd.projectcalico.org', ['ipamblocks', 'blockaffinities', 'ipamhandles'], ['update', 'delete'])] : []),
    ...(whereabouts ? [...WHEREABOUTS_PERMISSIONS, ...WHEREABOUTS_AGES, ...writes('whereabouts.cni.cncf.io', ['ippools'], ['patch']), ...writes('whereabouts.cni.cncf.io', ['overlappingrangeipreservations'], ['delete'])] : []),
    { verb: 'get', group: '', resource: 'nodes' },
    { verb: 'list', group: '', resource: 'pods' },
    { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace },
    { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace, write: true },
    { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace, write: true },
  ];
}

export const describePermission = (p: Permission) =>
  `${p.verb} ${p.resource}${p.subresource ? `/${p.subresource}` : ''}${p.group ? `.${p.group}` : ''}${p.name ? ` ${p.name}` : ''}${p.namespace ? ` in ${p.namespace}` : ''}`;

interface AccessReview {
  status?: { allowed?: boolean; reason?: string };
}

/** The permissions the API server denies to this identity; throws when it cannot be asked (fail closed). */
export async function deniedPermissions(cluster: Cluster, wanted: Permission[]): Promise<Permission[]> {
  const answers = await Promise.all(
    wanted.map(async (p) => {
      const review = await cluster.request<AccessReview>('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: { verb: p.verb, group: p.group, resource: p.resource, subresource: p.subresource, name: p.name, namespace: p.namespace } },
      });
      return review.status?.allowed === true;
    }),
  );
  return wanted.filter((_, i) => !answers[i]);
}

/** Refuses the run (exit 10, nothing changed) when the identity lacks a permission it needs, naming each one. */
export async function requirePermissions(cluster: Cluster, wanted: Permission[], who: string, what = 'run', grantedBy = 'runbooks/rbac.yaml grants what node-maint needs'): Promise<void> {
  let denied: Permission[];
  try {
    denied = await deniedPermissions(cluster, wanted);
  } catch (cause) {
    throw new RunbookError('preflight', `could not check what ${who} may do (SelfSubjectAccessReview failed: ${(cause as Error).message}); nothing was changed`, { cause });
  }
  if (denied.length > 0) {
    throw new RunbookError(
      'preflight',
      `${who} lacks ${denied.length} permission(s) the ${what} needs: ${denied.map(describePermission).join(', ')}; nothing was changed. ${grantedBy}`,
    );
  }
}
