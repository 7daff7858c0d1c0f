import { stoppedError } from '../../stop.js';
import pRetry, { AbortError } from 'p-retry';
import { ApiError, isNotFound, type Cluster } from '../api.js';
import { waitUntil } from '../../wait.js';
import { listPodsOnNode, podKey } from '../pods.js';
import type { Pod } from '../types.js';
import { deletedLongAgo } from './filters.js';

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
  /** Still there, but deleted longer ago than --skip-wait-for-delete-timeout: no longer waited for. */
  onSkipped?(pod: Pod, deletedSecondsAgo: number): void;
}

export interface EvictOptions {
  gracePeriodSeconds: number;
  deadline: number;
  version: EvictionVersion;
  progress?: EvictionProgress;
  /** Between retries of a refused eviction; grows to maxRetryDelayMs. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** An operator's stop: no further eviction is asked, a refused one is not retried. */
  signal?: AbortSignal;
}

/** The pod we meant is gone: deleted, or replaced by a namesake with another UID. */
async function goneOrReplaced(cluster: Cluster, pod: Pod): Promise<boolean> {
  try {
    const now = await cluster.get<Pod>(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`);
    return now.metadata.uid !== pod.metadata.uid;
  } catch (e) {
    if (isNotFound(e)) return true;
    throw e;
  }
}

/**
 * One eviction request: resolves once the API accepted it or the pod we meant is gone (404; a 409 is "gone" only
 * when the pod, read again as kubectl does, is gone or has another UID); otherwise throws the API's answer.
 */
export async function postEviction(cluster: Cluster, pod: Pod, options: Pick<EvictOptions, 'gracePeriodSeconds' | 'version'>): Promise<void> {
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
  try {
    await cluster.request('POST', `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, body);
  } catch (e) {
    if (isNotFound(e)) return;
    if (e instanceof ApiError && e.status === 409 && (await goneOrReplaced(cluster, pod))) return;
    throw e;
  }
}

/** Worth asking again: a budget refusing (429), a conflict on the budget's status (409), a server error, a namespace terminating. */
export const isRetriableEviction = (e: unknown) => e instanceof ApiError && (e.status === 429 || e.status === 409 || e.status >= 500 || (e.status === 403 && /terminat/i.test(e.message)));

export const evictionError = (pod: Pod, message: string, cause?: unknown) => new Error(`error when evicting pods/${pod.metadata.name} -n ${pod.metadata.namespace}: ${message}`, { cause });

/**
 * Evicts one pod, retrying while a budget refuses (429), while the API conflicts (409: a budget's status was being
 * updated, or the UID precondition failed) or errs (5xx), with backoff up to the deadline, as kubectl drain does.
 */
export async function evictPod(cluster: Cluster, pod: Pod, options: EvictOptions): Promise<void> {
  options.progress?.onEvicting?.(pod);
  try {
    await pRetry(
      async () => {
        try {
          await postEviction(cluster, pod, options);
        } catch (e) {
          if (!isRetriableEviction(e)) throw new AbortError(evictionError(pod, (e as Error).message, e));
          throw e;
        }
      },
      {
        retries: Number.POSITIVE_INFINITY,
        minTimeout: options.retryDelayMs ?? 1_000,
        maxTimeout: options.maxRetryDelayMs ?? 5_000,
        maxRetryTime: Math.max(0, options.deadline - Date.now()),
        onFailedAttempt: ({ error, attemptNumber }) => options.progress?.onRetry?.(pod, error.message, attemptNumber),
        signal: options.signal,
      },
    );
  } catch (e) {
    if (options.signal?.aborted) throw stoppedError(options.signal, `it gave up evicting ${pod.metadata.namespace}/${pod.metadata.name}`);
    if (e instanceof ApiError) throw evictionError(pod, `global timeout reached: ${e.message}`, e);
    throw e;
  }
}

/**
 * Waits until none of these pods (by UID) is on the node. One list per poll for all of them, every pollMs, so a
 * deletion is noticed within a second. Times out naming the pods still there.
 */
export async function waitForPodsGone(
  cluster: Cluster,
  node: string,
  pods: Pod[],
  options: { deadline: number; pollMs?: number; progress?: EvictionProgress; skipWaitForDeleteTimeoutSeconds?: number; signal?: AbortSignal },
): Promise<void> {
  const started = Date.now();
  const waiting = new Map(pods.map((p) => [p.metadata.uid!, p]));
  const skip = { skipWaitForDeleteTimeoutSeconds: options.skipWaitForDeleteTimeoutSeconds ?? 0 };
  await waitUntil(
    'the evicted pods to terminate',
    async () => {
      const present = new Map((await listPodsOnNode(cluster, node)).map((p) => [p.metadata.uid, p]));
      for (const [uid, pod] of waiting) {
        const now = present.get(uid);
        if (!now) {
          waiting.delete(uid);
          options.progress?.onGone?.(pod, Date.now() - started);
          continue;
        }
        // As kubectl: deleted longer ago than the skip timeout (a finalizer holds it), no longer waited for.
        const since = deletedLongAgo(now, skip, Date.now());
        if (since !== undefined) {
          waiting.delete(uid);
          options.progress?.onSkipped?.(now, since);
        }
      }
      return waiting.size === 0 ? true : [...waiting.values()].map(podKey).join(', ');
    },
    { timeoutMs: Math.max(0, options.deadline - Date.now()), intervalMs: options.pollMs ?? 500, signal: options.signal },
  );
}
