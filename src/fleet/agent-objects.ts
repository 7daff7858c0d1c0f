import { dump, load } from 'js-yaml';
import { agentBundle, type KubeObject } from '../agent/bundle.js';
import { parsePolicy } from '../agent/policy.js';
import type { AgentConfig } from './config/agent.js';

// The node-maint agent as a stack makes it (agent in the stack config): runbooks/agent/, the same objects the README
// gives for `kubectl apply -k`, with the stack's image, nodes, environment and policy.

interface DaemonSetPod {
  nodeSelector?: Record<string, string>;
  containers: Array<{ image: string; imagePullPolicy: string; env: Array<{ name: string; value?: string }> }>;
}

/** The agent's objects; what sits in kube-system (its runs' Lease rights) goes where the fleet keeps its Leases. */
export function agentObjects(agent: AgentConfig, leaseNamespace: string): KubeObject[] {
  const objects = agentBundle();
  for (const o of objects) {
    // An agent applied before with kubectl (the README's way) is taken over, not a field conflict that stops the fleet.
    o.metadata.annotations = { ...o.metadata.annotations, 'pulumi.com/patchForce': 'true' };
    if (o.metadata.namespace === 'kube-system') o.metadata.namespace = leaseNamespace;
    if (o.kind === 'ConfigMap' && o.metadata.name === 'node-maint-agent-policy') {
      const data = o.data as Record<string, string>;
      const policy = { ...(load(data['policy.yaml']!) as object), ...agent.policy, leaseNamespace };
      parsePolicy(dump(policy));
      data['policy.yaml'] = dump(policy);
    }
    if (o.kind !== 'DaemonSet') continue;
    const pod = (o.spec as { template: { spec: DaemonSetPod } }).template.spec;
    if (Object.keys(agent.nodeSelector).length > 0) pod.nodeSelector = agent.nodeSelector;
    const [container] = pod.containers;
    Object.assign(container!, { image: agent.image, imagePullPolicy: agent.imagePullPolicy });
    container!.env.push(...Object.entries(agent.env).map(([name, value]) => ({ name, value })));
  }
  return objects;
}
