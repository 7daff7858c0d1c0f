import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { rbacObjects } from '../../../src/fleet/rbac-objects.js';

// What the fleet stack applies (createRbac): runbooks/rbac.yaml itself, moved to the fleet's lease namespace.
const names = (objects: any[]) => objects.map((o) => `${o.kind} ${o.metadata.namespace ?? '-'}/${o.metadata.name}${o.roleRef ? ` -> ${o.roleRef.name}` : ''}${o.subjects ? ` for ${o.subjects.map((s: any) => `${s.namespace}/${s.name}`).join(',')}` : ''}`);

describe('the fleet stack\'s RBAC objects', () => {
  it('in kube-system: runbooks/rbac.yaml as written, without reclaim\'s own objects (a fleet never reclaims)', () => {
    const shipped = readFileSync('runbooks/rbac.yaml', 'utf8').split(/^---$/m).map((doc) => load(doc) as any);
    const reclaims = shipped.filter((o) => o.metadata.labels?.['node-maint.io/entry-point'] === 'reclaim');
    expect(names(reclaims)).toEqual([
      'ServiceAccount kube-system/node-maint-reclaim',
      'ClusterRole -/node-maint-reclaim',
      'ClusterRoleBinding -/node-maint-reclaim -> node-maint-reclaim for kube-system/node-maint-reclaim',
      'Role kube-system/node-maint-reclaim',
      'RoleBinding kube-system/node-maint-reclaim -> node-maint-reclaim for kube-system/node-maint-reclaim',
    ]);
    expect(rbacObjects('kube-system')).toEqual(shipped.filter((o) => !reclaims.includes(o)));
    // The run's ClusterRole reads Calico's and whereabouts' records; only reclaim's may change them.
    const writes = (o: any) => o.rules.filter((r: any) => /projectcalico|whereabouts/.test(r.apiGroups[0]) && r.verbs.some((v: string) => !['get', 'list'].includes(v)));
    expect(writes(shipped.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'node-maint'))).toEqual([]);
    expect(writes(reclaims.find((o) => o.kind === 'ClusterRole'))).toHaveLength(3);
  });

  it('in another namespace: the ServiceAccount and its Role move there; the rest is named for it, so two fleets never rebind each other\'s', () => {
    expect(names(rbacObjects('maint'))).toEqual([
      'ServiceAccount maint/node-maint',
      'ClusterRole -/node-maint-maint',
      'ClusterRoleBinding -/node-maint-maint -> node-maint-maint for maint/node-maint',
      'Role maint/node-maint',
      'RoleBinding maint/node-maint -> node-maint for maint/node-maint',
      'Role default/node-maint-events-maint',
      'RoleBinding default/node-maint-events-maint -> node-maint-events-maint for maint/node-maint',
    ]);
    // The grants themselves are the shipped ones.
    expect(rbacObjects('maint').map((o: any) => o.rules)).toEqual(rbacObjects('kube-system').map((o: any) => o.rules));
  });

  it('in default, where the node Events\' Role lives too: each binding still refers to its own role', () => {
    expect(names(rbacObjects('default'))).toEqual([
      'ServiceAccount default/node-maint',
      'ClusterRole -/node-maint-default',
      'ClusterRoleBinding -/node-maint-default -> node-maint-default for default/node-maint',
      'Role default/node-maint',
      'RoleBinding default/node-maint -> node-maint for default/node-maint',
      'Role default/node-maint-events-default',
      'RoleBinding default/node-maint-events-default -> node-maint-events-default for default/node-maint',
    ]);
  });
});
