import type { Cluster } from '../cluster/api.js';
import { deniedPermissions, describePermission, type Permission } from '../cluster/permissions.js';
import { AGENT_NAMESPACE, RUN_GROUP, RUN_RESOURCE } from './run-object.js';
import { RUN_ACCOUNT } from './run-token.js';

// What an agent needs of the API (runbooks/agent/rbac.yaml grants exactly this), asked at its start, and whether its
// token carries its node (what the admission policy holds it to): a drift between the manifest and the code is said.

export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

export function agentPermissions(leaseNamespace: string): Permission[] {
  return [
    ...['get', 'list', 'watch'].map((verb) => ({ verb, group: RUN_GROUP, resource: RUN_RESOURCE })),
    { verb: 'update', group: RUN_GROUP, resource: RUN_RESOURCE, subresource: 'status' },
    ...['get', 'create', 'update'].map((verb) => ({ verb, group: '', resource: 'configmaps', namespace: AGENT_NAMESPACE })),
    { verb: 'create', group: '', resource: 'serviceaccounts', subresource: 'token', name: RUN_ACCOUNT.name, namespace: RUN_ACCOUNT.namespace },
    { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: leaseNamespace },
  ];
}

/** Logs each right the agent lacks, and a token that carries no node or another node's. */
export async function checkAgentRights(cluster: Cluster, node: string, leaseNamespace: string, log: (line: string) => void): Promise<void> {
  const review = await cluster.request<{ status?: { userInfo?: { username?: string; extra?: Record<string, string[]> } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  const user = review.status?.userInfo;
  const claimed = user?.extra?.[NODE_NAME_EXTRA]?.[0];
  if (claimed !== node) log(`this agent's token (${user?.username ?? 'unknown'}) carries ${claimed ? `the node ${claimed}` : 'no node'}, not ${node}: the admission policy refuses its writes (Kubernetes 1.30+ puts the pod's node in its token)`);
  const denied = await deniedPermissions(cluster, agentPermissions(leaseNamespace));
  if (denied.length > 0) log(`this agent lacks ${denied.map(describePermission).join(', ')}: runbooks/agent/rbac.yaml grants them (is it the manifest of this agent's version?)`);
  else log(`rights checked: ${user?.username}, node ${claimed}`);
}
