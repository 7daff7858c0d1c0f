import { describe, expect, it } from 'vitest';
import { agentObjects } from '../../../src/fleet/agent-objects.js';
import { parseFleetConfig } from '../../../src/fleet/config/index.js';

describe("the agent a fleet's stack makes (agent in its config)", () => {
  const config = parseFleetConfig(
    {
      'node-maint:nodes': '["n1"]',
      'node-maint:targets': '{"containerd":"2"}',
      'node-maint:access': '"agent"',
      'node-maint:agent': '{"image":"registry.example/node-maint/agent:0.2.0","nodeSelector":{"pool":"workers"},"env":{"NODE_MAINT_PACKAGES":"containerd,runc"}}',
    },
    { secretKeys: [] },
  );

  it("is runbooks/agent.yaml with the stack's image, nodes and environment", () => {
    const objects = agentObjects(config.agent!, 'kube-system');
    expect(objects.map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`)).toEqual([
      'Namespace /node-maint', 'ServiceAccount node-maint/node-maint-agent', 'Role node-maint/node-maint-agent', 'RoleBinding node-maint/node-maint-agent',
      'Role kube-system/node-maint-agent-token', 'RoleBinding kube-system/node-maint-agent-token', 'DaemonSet node-maint/node-maint-agent',
    ]);
    const pod = objects.find((o) => o.kind === 'DaemonSet')!.spec!.template.spec;
    expect(pod.nodeSelector).toEqual({ pool: 'workers' });
    expect(pod.containers[0]).toMatchObject({ image: 'registry.example/node-maint/agent:0.2.0', imagePullPolicy: 'IfNotPresent' });
    expect(pod.containers[0]!.env.map((e) => e.name)).toEqual(['NODE_NAME', 'NODE_MAINT_PACKAGES']);
  });

  it("asks its runs' tokens where the fleet's runbook account is (leaseNamespace)", () => {
    const objects = agentObjects(config.agent!, 'maint');
    expect(objects.filter((o) => o.metadata.name.startsWith('node-maint-agent-token')).map((o) => o.metadata.namespace)).toEqual(['maint', 'maint']);
    expect(objects.find((o) => o.kind === 'DaemonSet')!.spec!.template.spec.containers[0]!.env).toContainEqual({ name: 'NODE_MAINT_RUN_AS_NAMESPACE', value: 'maint' });
  });
});
