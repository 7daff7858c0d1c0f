import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, kubectl, kubectlJson, serviceAccountKubeconfig } from './bed.js';
import { useNamespace, useNodes } from './pool.js';
import { configureBedFleet, containerdOn, newStack, type PulumiStack } from './pulumi.js';

// The fleet stack makes runbooks/rbac.yaml's objects itself (createRbac, through @pulumi/kubernetes and its plugin
// built from Go modules), in a lease namespace of its own, and each node's runbook runs as that ServiceAccount. On a
// Calico node (issue 35): the proof reads and the audit judges calico-ipam's objects under that role too.
const [t] = useNodes('docker-calico');
const ns = useNamespace();
const shippedRules = (kind: string) => (loadAll(readFileSync('runbooks/rbac.yaml', 'utf8')) as any[]).find((o) => o.kind === kind && o.metadata.name === 'node-maint').rules;
const ours = () => [`clusterrole/node-maint-${ns.name}`, `clusterrolebinding/node-maint-${ns.name}`];
const deployer = `node-maint-deployer-${ns.name}`;

describe('the fleet stack\'s least privilege (createRbac)', () => {
  let stack: PulumiStack;

  beforeAll(async () => {
    stack = await newStack('rbac');
    await configureBedFleet(stack, [t.name], 1);
    await stack.set('leaseNamespace', ns.name);
    await stack.set('createRbac', 'true');
  });

  afterAll(async () => {
    // A failed case may leave them; destroy (the last case) removes them otherwise.
    await kubectl('delete', ...ours(), `clusterrole/${deployer}`, `clusterrolebinding/${deployer}`, '--ignore-not-found');
    await kubectl('-n', 'default', 'delete', `role/node-maint-events-${ns.name}`, `rolebinding/node-maint-events-${ns.name}`, '--ignore-not-found');
  });

  it('pulumi up makes runbooks/rbac.yaml\'s objects for its lease namespace, then upgrades the node as that ServiceAccount', async () => {
    const up = await stack.run(['up', '--yes', '--skip-preview']);
    expect(up.stdout + up.stderr).toContain(`[${t.name}] the runbook runs as the ServiceAccount ${ns.name}/node-maint`);
    expect(await containerdOn(t)).toBe(bed().containerd.new);
    expect((await kubectlJson('get', 'clusterrole', `node-maint-${ns.name}`)).rules).toEqual(shippedRules('ClusterRole'));
    expect((await kubectlJson('-n', ns.name, 'get', 'role', 'node-maint')).rules).toEqual(shippedRules('Role'));
    expect((await kubectlJson('get', 'clusterrolebinding', `node-maint-${ns.name}`)).subjects).toEqual([{ kind: 'ServiceAccount', name: 'node-maint', namespace: ns.name }]);
    // The run's Lease (released, its journal kept) is in the stack's namespace, where the Role lets the ServiceAccount keep it.
    const journal = JSON.parse((await kubectlJson('-n', ns.name, 'get', 'lease', `node-maint-${t.name}`)).metadata.annotations['node-maint.io/journal']);
    expect(journal).toMatchObject({ status: 'completed', node: t.name });
    expect(up.stdout + up.stderr).toMatch(new RegExp(`\\[${t.name}\\] +\\[10/1\\d\\] done in [0-9.]+s: smoke pod got IP 10\\.233\\.[0-9.]+, allocated by calico-ipam in block \\S+ affine to ${t.name}.*, released by calico-ipam after;.* audit clean`));
  });

  it('with one rule taken out of its ClusterRole, the next up stops before any change, naming the verb and resource', async () => {
    const rules = shippedRules('ClusterRole');
    const eviction = rules.findIndex((r: any) => r.resources.includes('pods/eviction'));
    await kubectl('patch', 'clusterrole', `node-maint-${ns.name}`, '--type', 'json', '-p', JSON.stringify([{ op: 'remove', path: `/rules/${eviction}` }]));
    await stack.set('targets', JSON.stringify({ containerd: bed().containerd.old }));
    const up = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(up.code).not.toBe(0);
    expect(up.stdout + up.stderr).toContain(`the kubeconfig's user ${ns.name}:node-maint lacks 1 permission(s) the run needs: create pods/eviction; nothing was changed`);
    expect(await containerdOn(t)).toBe(bed().containerd.new);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
  });

  it('a stack whose credentials may not ask the ServiceAccount\'s token stops before any change, naming the right to grant', async () => {
    // The deployer holds every right the run and the stack's RBAC take, but not create serviceaccounts/token.
    await applyObjects([
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'deployer', namespace: ns.name } },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: deployer }, rules: [
        ...shippedRules('ClusterRole'), ...shippedRules('Role'),
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'], verbs: ['*'] },
        { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['*'] },
      ] },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: deployer }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: deployer }, subjects: [{ kind: 'ServiceAccount', name: 'deployer', namespace: ns.name }] },
    ]);
    try {
      await stack.set('kubeconfig', (await serviceAccountKubeconfig(ns.name, 'deployer')).kubeconfig);
      const up = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
      expect(up.code).not.toBe(0);
      expect(up.stdout + up.stderr).toContain(`the kubeconfig's user ${ns.name}:deployer may not ask a token for the ServiceAccount ${ns.name}/node-maint (create serviceaccounts/token in ${ns.name}); nothing was changed`);
      expect(await containerdOn(t)).toBe(bed().containerd.new);
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    } finally {
      await stack.set('kubeconfig', bed().kubeconfig);
    }
  });

  it('with its ServiceAccount deleted by hand, the next up stops before any change, naming it', async () => {
    await kubectl('-n', ns.name, 'delete', 'serviceaccount', 'node-maint');
    const up = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(up.code).not.toBe(0);
    expect(up.stdout + up.stderr).toContain(`the ServiceAccount ${ns.name}/node-maint does not exist (createRbac makes it with the stack's RBAC); nothing was changed`);
    expect(await containerdOn(t)).toBe(bed().containerd.new);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
  });

  it('pulumi destroy removes the objects it made and leaves the node as it is', async () => {
    await stack.run(['destroy', '--yes', '--skip-preview']);
    expect(await kubectl('get', ...ours(), '--ignore-not-found', '-o', 'name')).toBe('');
    expect(await kubectl('-n', ns.name, 'get', 'serviceaccount,role,rolebinding', '--ignore-not-found', '-o', 'name')).not.toContain('node-maint');
    expect(await kubectl('-n', 'default', 'get', `role/node-maint-events-${ns.name}`, `rolebinding/node-maint-events-${ns.name}`, '--ignore-not-found', '-o', 'name')).toBe('');
    expect(await containerdOn(t)).toBe(bed().containerd.new);
  });
});
