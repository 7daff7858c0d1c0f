import { ApiError, type Cluster } from './api.js';
import type { List } from './types.js';

/**
 * Every item of a list, read in pages (limit/continue), so no answer is ever one huge string: a cluster-wide list of
 * 100k pods in one response overflows what a JavaScript string can hold. A continue token that expired (410 Gone)
 * starts the list again, once. `keep` trims each item as its page arrives, so a cluster-wide list holds only what
 * the caller reads (a pod's IPs and node, not its containers and managed fields).
 */
export async function listAll<T, K = T>(cluster: Cluster, path: string, pageSize = 500, keep: (item: T) => K = (item) => item as unknown as K): Promise<K[]> {
  const separator = path.includes('?') ? '&' : '?';
  for (let attempt = 1; ; attempt++) {
    const items: K[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await cluster.get<List<T>>(`${path}${separator}limit=${pageSize}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
        for (const item of page.items) items.push(keep(item));
        token = page.metadata?.continue || undefined;
      } while (token);
      return items;
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 410 && attempt === 1)) throw e;
    }
  }
}
