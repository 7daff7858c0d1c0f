import type { Cluster } from './api.js';

// A ConfigMap written whole: created when it has no resourceVersion to replace, else replaced only if it is still at
// that version (409 otherwise: someone wrote meanwhile, and the caller reads again).
export async function writeConfigMap(
  cluster: Cluster,
  namespace: string,
  name: string,
  data: Record<string, string>,
  options: { labels?: Record<string, string>; resourceVersion?: string } = {},
): Promise<{ metadata?: { resourceVersion?: string } }> {
  const collection = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;
  const metadata = { name, namespace, ...(options.labels ? { labels: options.labels } : {}), ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}) };
  const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata, data };
  if (options.resourceVersion) return cluster.request('PUT', `${collection}/${encodeURIComponent(name)}`, body);
  return cluster.request('POST', collection, body);
}
