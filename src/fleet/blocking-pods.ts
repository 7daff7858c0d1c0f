import type { Cluster } from '../cluster/api.js';
import { listAll } from '../cluster/list.js';
import { isTerminal, podKey } from '../cluster/pods.js';
import type { Pod } from '../cluster/types.js';
import { waitUntil } from '../wait.js';

// kured's blocking pod selector: while a pod matching it runs on the node (a backup, a batch job; or anywhere, with
// the cluster scope), the node is held; past the wait, it is passed by or stops the fleet as an undrainable one.
export type BlockingPodScope = 'node' | 'cluster';
export const BLOCKING_POD_SCOPES: readonly BlockingPodScope[] = ['node', 'cluster'];

export interface BlockingPods {
  selector: string;
  scope: BlockingPodScope;
  timeoutSeconds: number;
}

/** The pods that hold the node now ("namespace/name on node"). */
export async function blockingPodsNow(cluster: Cluster, node: string, blocking: BlockingPods): Promise<string[]> {
  const query = [`labelSelector=${encodeURIComponent(blocking.selector)}`, ...(blocking.scope === 'node' ? [`fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`] : [])].join('&');
  const pods = await listAll<Pod>(cluster, `/api/v1/pods?${query}`);
  return pods.filter((p) => !isTerminal(p)).map((p) => `${podKey(p)}${p.spec.nodeName ? ` on ${p.spec.nodeName}` : ''}`);
}

/**
 * What `pulumi preview` says of the blocking pods there now, one list for the fleet: each node they hold (every node,
 * with the cluster scope), and what `pulumi up` will do about it.
 */
export async function blockingPodsPlan(cluster: Cluster, nodes: string[], blocking: BlockingPods, undrainable: string): Promise<string[]> {
  const pods = (await listAll<Pod>(cluster, `/api/v1/pods?labelSelector=${encodeURIComponent(blocking.selector)}`)).filter((p) => !isTerminal(p));
  const then = undrainable === 'skip' ? 'then passes it by (undrainable: skip)' : 'then stops the fleet there';
  return nodes.flatMap((node) => {
    const holding = pods.filter((p) => blocking.scope === 'cluster' || p.spec.nodeName === node).map((p) => `${podKey(p)}${p.spec.nodeName ? ` on ${p.spec.nodeName}` : ''}`);
    return holding.length === 0 ? [] : [`${node}: held now by blocking pod(s) ${holding.join(', ')}: \`pulumi up\` waits up to ${blocking.timeoutSeconds}s for them to end, ${then}`];
  });
}

/** Waits until no blocking pod runs; the error says which still did when the wait ran out. */
export async function waitForNoBlockingPods(cluster: Cluster, node: string, blocking: BlockingPods, log: (line: string) => void, signal?: AbortSignal): Promise<void> {
  await waitUntil(
    `no pod matching ${blocking.selector}${blocking.scope === 'node' ? ` on ${node}` : ' in the cluster'}`,
    async () => {
      const pods = await blockingPodsNow(cluster, node, blocking);
      return pods.length === 0 ? true : `held by blocking pod(s) ${pods.join(', ')}`;
    },
    { timeoutMs: blocking.timeoutSeconds * 1000, intervalMs: 5_000, onChange: (seen) => log(`[${node}] ${seen}`), signal },
  );
}
