import { ApiError, type Cluster } from '../../cluster/api.js';
import type { Finding } from '../types.js';

/** Calico IPAM findings for a node, or none when the cluster has no Calico CRDs. Filled in by the Calico audit. */
export async function calicoFindings(cluster: Cluster, node: string): Promise<Finding[]> {
  try {
    await cluster.get('/apis/crd.projectcalico.org/v1');
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return [];
    throw e;
  }
  void node;
  return [];
}
