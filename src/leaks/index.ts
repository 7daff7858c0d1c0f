import type { Cluster } from '../cluster/api.js';
import { getNode, podCidr } from '../cluster/nodes.js';
import { listPodsOnNode } from '../cluster/pods.js';
import { readNodeState } from '../node/state/index.js';
import type { NodeState } from '../node/state/types.js';
import type { Transport } from '../node/transport/types.js';
import { auditNode } from './audit.js';
import { calicoFindings } from './calico/index.js';
import type { AuditReport } from './types.js';

export interface LiveAuditInput {
  cluster: Cluster;
  transport: Transport;
  node: string;
  /** A state already read in this round trip, to save one. */
  state?: NodeState;
}

/** Reads the node (one round trip) and the cluster, then runs the pure audit. */
export async function auditLiveNode(input: LiveAuditInput): Promise<{ report: AuditReport; state: NodeState; podCidr?: string }> {
  const [state, node, pods, calico] = await Promise.all([
    input.state ?? readNodeState(input.transport),
    getNode(input.cluster, input.node),
    listPodsOnNode(input.cluster, input.node),
    calicoFindings(input.cluster, input.node),
  ]);
  const cidr = podCidr(node);
  return { report: auditNode({ node: input.node, state, pods, podCidr: cidr, clusterFindings: calico }), state, podCidr: cidr };
}

export { auditNode } from './audit.js';
export * from './types.js';
