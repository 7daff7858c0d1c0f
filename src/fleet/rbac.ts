import * as k8s from '@pulumi/kubernetes';
import type * as pulumi from '@pulumi/pulumi';
import type { AgentConfig } from './config/agent.js';
import type { FleetConfig } from './config/index.js';
import { agentObjects } from './agent-objects.js';
import { rbacObjects } from './rbac-objects.js';

// Loaded only by a stack that makes its RBAC (createRbac) or its agent (agent): the others need neither
// @pulumi/kubernetes nor its plugin. Both are applied with the stack's own credentials (which must be allowed to grant them).

let provider: k8s.Provider | undefined;
const kubernetes = (config: FleetConfig) =>
  (provider ??= new k8s.Provider('node-maint', {
    ...(config.kubeconfig ? { kubeconfig: config.kubeconfig } : {}),
    ...(config.context ? { context: config.context } : {}),
  }));

export function createRbac(config: FleetConfig): pulumi.Resource {
  return new k8s.yaml.v2.ConfigGroup('node-maint-rbac', { objs: rbacObjects(config.leaseNamespace) }, { provider: kubernetes(config) });
}

export function createAgent(config: FleetConfig, agent: AgentConfig): pulumi.Resource {
  return new k8s.yaml.v2.ConfigGroup('node-maint-agent', { objs: agentObjects(agent, config.leaseNamespace) }, { provider: kubernetes(config) });
}
