import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, auditNode, bed, DRAIN_FLAGS, kubectl, kubectlJson, serviceAccountKubeconfig, upgradeNode } from './bed.js';
import { report, stepLine } from './faults.js';
import { useNamespace, useNodes } from './pool.js';
import { containerdOn } from './pulumi.js';

// The runbook as a least-privilege ServiceAccount: runbooks/rbac.yaml applied as written, and a copy of its
// ClusterRole with one rule taken out. Every run asks the API server what it may do before it changes anything.
const [t] = useNodes('any');
const ns = useNamespace();
const noEvictions = () => `node-maint-test-no-evictions-${ns.name}`;
const withKubeconfig = (kubeconfig: string) => t.flags.map((f) => (f === bed().kubeconfig ? kubeconfig : f));
const upgrade = (kubeconfig: string) => upgradeNode([t.name, '--to', `containerd=${bed().containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...withKubeconfig(kubeconfig)]);

beforeAll(async () => {
  await kubectl('apply', '-f', 'runbooks/rbac.yaml');
  // The same grants for a ServiceAccount of the test's namespace, but the ClusterRole without pods/eviction.
  const role = await kubectlJson('get', 'clusterrole', 'node-maint');
  const subjects = [{ kind: 'ServiceAccount', name: 'no-evictions', namespace: ns.name }];
  await kubectl('-n', ns.name, 'create', 'serviceaccount', 'no-evictions');
  await applyObjects([
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: noEvictions() }, rules: role.rules.filter((r: any) => !r.resources.includes('pods/eviction')) },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: noEvictions() }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: noEvictions() }, subjects },
    ...[['kube-system', 'node-maint'], ['default', 'node-maint-events']].map(([namespace, name]) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: noEvictions(), namespace }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects,
    })),
  ]);
});

afterAll(async () => {
  await kubectl('delete', 'clusterrole,clusterrolebinding', noEvictions(), '--ignore-not-found');
  for (const namespace of ['kube-system', 'default']) await kubectl('-n', namespace, 'delete', 'rolebinding', noEvictions(), '--ignore-not-found');
});

describe('a least-privilege ServiceAccount', () => {
  it('missing one permission (evictions): refused before the cordon (exit 10), naming it, nothing changed', async () => {
    const { kubeconfig } = await serviceAccountKubeconfig(ns.name, 'no-evictions');
    const before = await containerdOn(t);
    const result = await upgrade(kubeconfig);
    expect(result.code, result.stderr).toBe(10);
    expect(report(result).error.message).toContain(`the kubeconfig's user ${ns.name}:no-evictions lacks 1 permission(s) the run needs: create pods/eviction; nothing was changed`);
    expect(result.stderr).not.toContain(stepLine('cordon'));
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    expect(await kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${t.name}`, '--ignore-not-found')).toBe('');
    expect(await containerdOn(t)).toBe(before);
  });

  it('reclaim asks first: the run\'s ServiceAccount may not release IPAM records (exit 10, nothing done); reclaim\'s own may', async () => {
    const reclaim = (kubeconfig: string) => auditNode([t.name, '--reclaim', '--output', 'json', '--interval', '1', ...withKubeconfig(kubeconfig)]);
    const run = await serviceAccountKubeconfig('kube-system', 'node-maint');
    const refused = await reclaim(run.kubeconfig);
    expect(refused.code, refused.stderr).toBe(10);
    // The bed serves Calico's and whereabouts' records: their releases are reclaim's rights alone.
    expect(JSON.parse(refused.stdout).error.message).toMatch(/^the kubeconfig's user kube-system:node-maint lacks 8 permission\(s\) the reclaim needs: update ipamblocks\.crd\.projectcalico\.org, delete ipamblocks\.crd\.projectcalico\.org, .*delete overlappingrangeipreservations\.whereabouts\.cni\.cncf\.io; nothing was changed/);
    expect(refused.stderr).not.toContain('reclaim plan for');
    expect(await kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${t.name}`, '--ignore-not-found')).toBe('');
    const own = await serviceAccountKubeconfig('kube-system', 'node-maint-reclaim');
    const allowed = await reclaim(own.kubeconfig);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toContain(`reclaim plan for ${t.name}:`);
  });

  it('with runbooks/rbac.yaml as written: a full upgrade, proof and audit included', async () => {
    const { kubeconfig } = await serviceAccountKubeconfig('kube-system', 'node-maint');
    const result = await upgrade(kubeconfig);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ result: 'upgraded', versions: { after: { containerd: bed().containerd.new } }, audit: { findings: 0 } });
  });
});
