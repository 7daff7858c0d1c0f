import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';

// The fleet's least privilege: runbooks/rbac.yaml, the same objects the README gives for the zx entry point.

export const SERVICE_ACCOUNT = 'node-maint';

interface KubeObject {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  roleRef?: { kind: string; name: string };
  subjects?: Array<{ namespace?: string }>;
}

/**
 * runbooks/rbac.yaml (the objects of upgrades, not reclaim's) for a lease namespace. kube-system: as written. Another: its kube-system objects (the
 * ServiceAccount, the Leases' and smoke pods' Role) go there, and every other object (the ClusterRole, the node
 * Events' Role in default, their bindings) is named for it, so that two fleets never rebind each other's.
 */
export function rbacObjects(leaseNamespace: string): KubeObject[] {
  // The fleet runs upgrades, never a reclaim: reclaim's own objects are not its to make.
  const objects = (loadAll(readFileSync(new URL('../../runbooks/rbac.yaml', import.meta.url), 'utf8')) as KubeObject[]).filter((o) => o.metadata.labels?.['node-maint.io/entry-point'] !== 'reclaim');
  if (leaseNamespace === 'kube-system') return objects;
  const named = (name: string) => `${name}-${leaseNamespace}`;
  const key = (kind: string, namespace: string | undefined, name: string) => `${kind}/${namespace ?? ''}/${name}`;
  const renamed = new Set<string>();
  for (const o of objects) {
    if (o.metadata.namespace === 'kube-system') o.metadata.namespace = leaseNamespace;
    else {
      renamed.add(key(o.kind, o.metadata.namespace, o.metadata.name));
      o.metadata.name = named(o.metadata.name);
    }
    for (const s of o.subjects ?? []) if (s.namespace === 'kube-system') s.namespace = leaseNamespace;
  }
  // A binding follows its role's new name (a ClusterRole has no namespace, a Role shares its binding's).
  for (const o of objects) {
    if (o.roleRef && renamed.has(key(o.roleRef.kind, o.roleRef.kind === 'ClusterRole' ? undefined : o.metadata.namespace, o.roleRef.name))) o.roleRef.name = named(o.roleRef.name);
  }
  return objects;
}
