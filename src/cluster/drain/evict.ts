import { ApiError, isNotFound, type Cluster } from '../api.js';
import { podKey } from '../pods.js';
import type { List, Pod } from '../types.js';

// Evictions with kubectl drain's semantics: the eviction API (policy/v1, or v1beta1 where that is all the server
// has), 429 from a PodDisruptionBudget retried with backoff up to one deadline, pods waited for by UID.
export type EvictionVersion = 'policy/v1' | 'policy/v1beta1';

/** Which policy version serves pods/eviction, from discovery, as kubectl's CheckEvictionSupport. */
export async function evictionVersion(cluster: Cluster): Promise<EvictionVersion> {
  const core = await cluster.get<{ resources: Array<{ name: string; group?: string; version?: string }> }>('/api/v1');
  const eviction = core.resources.find((r) => r.name === 'pods/eviction');
  return eviction?.version === 'v1beta1' ? 'policy/v1beta1' : 'policy/v1';
}

export interface EvictionProgress {
  onEvicting?(pod: Pod): void;
  onRetry?(pod: Pod, reason: string, attempt: number): void;
  onGone?(pod: Pod, afterMs: number): void;
}

export interface EvictOptions {
  gracePeriodSeconds: number;
  deadline: number;
  version: EvictionVersion;
  progress?: EvictionProgress;
  /** Between retries of a refused eviction; grows to maxRetryDelayMs. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Evicts one pod, retrying while a budget refuses; resolves once the API accepted the eviction (or the pod is gone). */
export async function evictPod(cluster: Cluster, pod: Pod, options: EvictOptions): Promise<void> {
  const { name, namespace, uid } = pod.metadata;
  const body = {
    apiVersion: options.version,
    kind: 'Eviction',
    metadata: { name, namespace },
    deleteOptions: {
      ...(options.gracePeriodSeconds >= 0 ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
      preconditions: { uid },
    },
  };
  let delay = options.retryDelayMs ?? 1_000;
  options.progress?.onEvicting?.(pod);
  for (let attempt = 1; ; attempt++) {
    try {
      await cluster.request('POST', `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, body);
      return;
    } catch (e) {
      if (isNotFound(e)) return;
      // 409: the UID precondition failed, so the pod we meant is already gone and a namesake took its place.
      if (e instanceof ApiError && e.status === 409) return;
      const retriable = e instanceof ApiError && (e.status === 429 || e.status >= 500 || (e.status === 403 && /terminat/i.test(e.message)));
      if (!retriable) throw new Error(`error when evicting pods/${name} -n ${namespace}: ${(e as Error).message}`, { cause: e });
      if (Date.now() + delay > options.deadline) {
        throw new Error(`error when evicting pods/${name} -n ${namespace}: global timeout reached: ${(e as Error).message}`, { cause: e });
      }
      options.progress?.onRetry?.(pod, (e as Error).message, attempt);
      await sleep(delay);
      delay = Math.min(delay * 2, options.maxRetryDelayMs ?? 5_000);
    }
  }
}

/**
 * Waits until none of these pods (by UID) is on the node. One list per poll for all of them, every pollMs, so a
 * deletion is noticed within a second.
 */
export async function waitForPodsGone(
  cluster: Cluster,
  node: string,
  pods: Pod[],
  options: { deadline: number; pollMs?: number; progress?: EvictionProgress },
): Promise<void> {
  const started = Date.now();
  const waiting = new Map(pods.map((p) => [p.metadata.uid!, p]));
  const selector = encodeURIComponent(`spec.nodeName=${node}`);
  while (waiting.size > 0) {
    const list = await cluster.get<List<Pod>>(`/api/v1/pods?fieldSelector=${selector}&limit=5000`);
    const present = new Set(list.items.map((p) => p.metadata.uid));
    for (const [uid, pod] of waiting) {
      if (!present.has(uid)) {
        waiting.delete(uid);
        options.progress?.onGone?.(pod, Date.now() - started);
      }
    }
    if (waiting.size === 0) return;
    if (Date.now() >= options.deadline) {
      throw new Error(`timed out waiting for ${[...waiting.values()].map(podKey).join(', ')} to terminate`);
    }
    await sleep(options.pollMs ?? 500);
  }
}
