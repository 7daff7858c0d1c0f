import { isNotFound, type Cluster } from '../cluster/api.js';
import type { ConfigMap } from '../cluster/types.js';

// The operator's brake: while this ConfigMap exists in the lease namespace, no node of the fleet starts; a node
// already running finishes.
export const PAUSE_CONFIGMAP = 'node-maint-pause';

/** Why the fleet is held, naming the ConfigMap, its reason and how to go on; undefined without a ConfigMap. */
export function pauseHold(namespace: string, configMap: ConfigMap | undefined): string | undefined {
  if (!configMap) return undefined;
  const reason = configMap.data?.reason?.trim();
  return (
    `paused by ConfigMap ${namespace}/${PAUSE_CONFIGMAP}${reason ? ` (reason: ${reason})` : ''}; ` +
    `remove it (\`kubectl -n ${namespace} delete configmap ${PAUSE_CONFIGMAP}\`) and run \`pulumi up\` again to continue where it stopped`
  );
}

/** The pause ConfigMap, or undefined when there is none; any other answer of the API is thrown, so a node never starts unchecked. */
export async function readPause(cluster: Cluster, namespace: string): Promise<ConfigMap | undefined> {
  try {
    return await cluster.get<ConfigMap>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${PAUSE_CONFIGMAP}`);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
