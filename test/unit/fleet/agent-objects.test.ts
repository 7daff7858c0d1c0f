import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { agentBundle } from '../../../src/agent/bundle.js';
import { parsePolicy } from '../../../src/agent/policy.js';
import { agentObjects } from '../../../src/fleet/agent-objects.js';
import { parseFleetConfig } from '../../../src/fleet/config/index.js';

describe("the agent a fleet's stack makes (agent in its config)", () => {
  const config = (agent: object) =>
    parseFleetConfig({ 'node-maint:nodes': '["n1"]', 'node-maint:targets': '{"containerd":"2"}', 'node-maint:access': '"agent"', 'node-maint:agent': JSON.stringify(agent) }, { secretKeys: [] });
  const agent = config({ image: 'registry.example/node-maint/agent:0.2.0', nodeSelector: { pool: 'workers' }, env: { NODE_MAINT_PACKAGES: 'containerd,runc' }, policy: { pendingUpgrades: true, pendingOrigins: ['Debian-Security'] } }).agent!;
  const names = (objects: Array<{ kind: string; metadata: { name: string; namespace?: string } }>) => objects.map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`);

  it("is runbooks/agent/ as shipped (namespaces and the CRD first), with the stack's image, nodes, environment and policy", () => {
    const objects = agentObjects(agent, 'kube-system');
    expect(names(objects)).toEqual(names(agentBundle()));
    expect(names(objects).slice(0, 3)).toEqual(['Namespace /node-maint', 'Namespace /node-maint-smoke', 'CustomResourceDefinition /maintenanceruns.node-maint.io']);
    const pod = (objects.find((o) => o.kind === 'DaemonSet') as any).spec.template.spec;
    expect(pod.nodeSelector).toEqual({ pool: 'workers' });
    expect(pod.containers[0]).toMatchObject({ image: 'registry.example/node-maint/agent:0.2.0', imagePullPolicy: 'IfNotPresent' });
    expect(pod.containers[0].env.map((e: { name: string }) => e.name)).toEqual(['NODE_NAME', 'NODE_MAINT_PACKAGES']);
    const policy = parsePolicy((objects.find((o) => o.metadata.name === 'node-maint-agent-policy') as any).data['policy.yaml']);
    expect(policy).toMatchObject({ pendingUpgrades: true, pendingOrigins: ['Debian-Security'], packages: expect.arrayContaining(['containerd', 'runc']), leaseNamespace: 'kube-system', controlPlane: false });
  });

  it("gives its runs the Lease where the fleet keeps them (leaseNamespace), in the rights and in the policy", () => {
    const objects = agentObjects(agent, 'maint');
    expect(objects.filter((o) => o.metadata.namespace === 'kube-system')).toEqual([]);
    expect(names(objects.filter((o) => o.metadata.namespace === 'maint'))).toEqual(['Role maint/node-maint-agent', 'RoleBinding maint/node-maint-agent', 'Role maint/node-maint-run', 'RoleBinding maint/node-maint-run']);
    expect((load((objects.find((o) => o.metadata.name === 'node-maint-agent-policy') as any).data['policy.yaml']) as any).leaseNamespace).toBe('maint');
  });

  it('refuses a policy key it does not know, and one the stack sets itself', () => {
    expect(() => config({ image: 'r/a:1', policy: { pakages: ['sudo'] } })).toThrow('the agent\'s policy has an unknown key "pakages"');
    expect(() => config({ image: 'r/a:1', policy: { leaseNamespace: 'x' } })).toThrow("is the stack's leaseNamespace");
  });
});
