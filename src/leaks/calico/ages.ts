import { ApiError, type Cluster } from '../../cluster/api.js';
import { findingKey } from '../reclaim/plan.js';
import type { Finding } from '../types.js';
import { CALICO_GROUP, handleObjectName } from './names.js';

/**
 * Each Calico finding's age: its handle's (calico-ipam makes the handle as it allocates) or its affinity's object,
 * from the API's creationTimestamp. None where the object is gone (the release then finds it gone too); any other
 * failure stops the reclaim before it changes anything.
 */
export async function calicoAges(cluster: Cluster, findings: Finding[]): Promise<Map<string, number>> {
  const ages = new Map<string, number>();
  for (const f of findings) {
    const name = f.class === 'calico-affinity-orphan' ? `blockaffinities/${String(f.evidence.affinity)}` : f.class.startsWith('calico-') && f.evidence.handle ? `ipamhandles/${handleObjectName(String(f.evidence.handle))}` : undefined;
    if (!name) continue;
    const made = await cluster.get<{ metadata: { creationTimestamp?: string } }>(`${CALICO_GROUP}/${name}`).then(
      (o) => o.metadata.creationTimestamp,
      (e: unknown) => {
        if (e instanceof ApiError && e.status === 404) return undefined;
        throw e;
      },
    );
    if (made) ages.set(findingKey(f), (Date.now() - Date.parse(made)) / 1000);
  }
  return ages;
}
