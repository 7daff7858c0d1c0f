import * as k8s from '@pulumi/kubernetes';
import type * as pulumi from '@pulumi/pulumi';
import type { FleetConfig } from './config/index.js';
import { rbacObjects } from './rbac-objects.js';

// Loaded only by a stack that makes its RBAC (createRbac): the others need neither @pulumi/kubernetes nor its plugin.

/** The objects applied with the stack's own credentials (which must be allowed to grant them). */
export function createRbac(config: FleetConfig): pulumi.Resource {
  const provider = new k8s.Provider('node-maint', {
    ...(config.kubeconfig ? { kubeconfig: config.kubeconfig } : {}),
    ...(config.context ? { context: config.context } : {}),
  });
  return new k8s.yaml.v2.ConfigGroup('node-maint-rbac', { objs: rbacObjects(config.leaseNamespace) }, { provider });
}
