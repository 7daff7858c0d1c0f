import { isNotFound, type Cluster } from './api.js';

/** Whether the cluster serves this API group version (one small discovery read): a cluster without it lists nothing. */
export async function servesGroup(cluster: Cluster, groupPath: string): Promise<boolean> {
  try {
    await cluster.get(groupPath);
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}
