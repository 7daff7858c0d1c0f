import { parsePolicy, type AgentPolicy } from '../../agent/policy.js';
import { messageOf } from '../../errors.js';
import { ConfigError, objectOf, stringMap } from './values.js';

// agent: the stack makes the node-maint agent itself (runbooks/agent.yaml through @pulumi/kubernetes), with access: agent.

export interface AgentConfig {
  /** Where the nodes pull the agent's image from (built from this repository). */
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Only nodes with these labels get an agent (all nodes when empty). */
  nodeSelector: Record<string, string>;
  /** More environment for the agent (NODE_MAINT_PACKAGES, or the API's address where no kube-proxy serves the Service). */
  env: Record<string, string>;
  /** What runs may ask of these agents, over the shipped policy (runbooks/agent/daemonset.yaml): its keys. */
  policy: Partial<AgentPolicy>;
}

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;

export function agentConfig(value: unknown, access: 'ssh' | 'agent'): AgentConfig | undefined {
  const raw = objectOf('agent', value, ['image', 'imagePullPolicy', 'nodeSelector', 'env', 'policy'], '{"image": "registry.example/node-maint/agent:0.1.0"}');
  if (!raw) return undefined;
  if (access !== 'agent') throw new ConfigError('agent', 'is read only with access: agent (the stack then makes the agent it runs each node through)');
  // An image reference's characters only: it goes into the DaemonSet as it is.
  if (typeof raw.image !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/.test(raw.image)) throw new ConfigError('agent.image', `must be an image reference, e.g. registry.example/node-maint/agent:0.1.0 (got ${JSON.stringify(raw.image)})`);
  const policy = raw.imagePullPolicy ?? 'IfNotPresent';
  if (!(PULL_POLICIES as readonly unknown[]).includes(policy)) throw new ConfigError('agent.imagePullPolicy', `must be ${PULL_POLICIES.join(', ')} (got ${JSON.stringify(policy)})`);
  const env = stringMap('agent.env', raw.env);
  const bad = Object.keys(env).find((k) => !/^[A-Z_][A-Z0-9_]*$/.test(k) || k === 'NODE_NAME');
  if (bad !== undefined) throw new ConfigError('agent.env', `${JSON.stringify(bad)} is not a variable the stack may set (upper case, digits and _; NODE_NAME is the agent's own)`);
  const owner = raw.policy ?? {};
  if (typeof owner !== 'object' || Array.isArray(owner)) throw new ConfigError('agent.policy', 'must be an object of the agent policy\'s keys (packages, reboot, pendingUpgrades, ...)');
  if ('leaseNamespace' in owner) throw new ConfigError('agent.policy.leaseNamespace', 'is the stack\'s leaseNamespace');
  try {
    parsePolicy(JSON.stringify(owner));
  } catch (e) {
    throw new ConfigError('agent.policy', messageOf(e));
  }
  return { image: raw.image, imagePullPolicy: policy as AgentConfig['imagePullPolicy'], nodeSelector: stringMap('agent.nodeSelector', raw.nodeSelector), env, policy: owner as Partial<AgentPolicy> };
}
