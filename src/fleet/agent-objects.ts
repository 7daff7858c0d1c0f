import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import type { AgentConfig } from './config/agent.js';

// The node-maint agent as a stack makes it (agent in the stack config): runbooks/agent.yaml, the same objects the
// README gives for `kubectl apply`, with the stack's image, nodes and environment.

interface AgentObject {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  subjects?: Array<{ namespace?: string }>;
  spec?: { template: { spec: { nodeSelector?: Record<string, string>; containers: Array<{ image: string; imagePullPolicy: string; env: Array<{ name: string; value?: string }> }> } } };
}

/** The agent's objects; its runs' account is the fleet's (node-maint in leaseNamespace), whose tokens it may ask. */
export function agentObjects(agent: AgentConfig, leaseNamespace: string): AgentObject[] {
  const objects = loadAll(readFileSync(new URL('../../runbooks/agent.yaml', import.meta.url), 'utf8')) as AgentObject[];
  for (const o of objects) {
    // An agent applied before with kubectl (the README's way) is taken over, not a field conflict that stops the fleet.
    o.metadata.annotations = { ...o.metadata.annotations, 'pulumi.com/patchForce': 'true' };
    // The token Role and its binding sit where the runbook's account is.
    if (o.metadata.namespace === 'kube-system') o.metadata.namespace = leaseNamespace;
    if (o.kind !== 'DaemonSet') continue;
    const pod = o.spec!.template.spec;
    if (Object.keys(agent.nodeSelector).length > 0) pod.nodeSelector = agent.nodeSelector;
    const [container] = pod.containers;
    Object.assign(container!, { image: agent.image, imagePullPolicy: agent.imagePullPolicy });
    const env = { ...agent.env, ...(leaseNamespace !== 'kube-system' ? { NODE_MAINT_RUN_AS_NAMESPACE: leaseNamespace } : {}) };
    container!.env.push(...Object.entries(env).map(([name, value]) => ({ name, value })));
  }
  return objects;
}
