import { setTimeout as sleep } from 'node:timers/promises';
import type { RunbookError } from '../../errors.js';
import { stoppedError } from '../../stop.js';
import type { Cluster } from '../api.js';
import { isPodReady } from '../pods.js';
import { matchesSelector } from '../selector.js';
import type { List, Pod, PodDisruptionBudget } from '../types.js';
import { evictionError, evictPod, isRetriableEviction, postEviction, type EvictOptions } from './evict.js';

// Evictions paced by the budgets themselves: as many pods of a PodDisruptionBudget as it allows, the moment it allows
// them (a watch on the budgets tells), where kubectl drain retries every refused eviction every 5 s. Pods no budget
// covers (or more than one: the API decides) go at once, through evictPod's retries.

const budgetKey = (b: PodDisruptionBudget) => `${b.metadata.namespace}/${b.metadata.name}`;
/** Waited for at most this long between budget changes, should the watch miss one. */
const FALLBACK_MS = 5_000;
/** A batch of evictions changes its budget once per eviction: these updates are let arrive together. */
const SETTLE_MS = 100;

/** The budgets as last seen, kept current by a watch that lists again and re-watches when the server ends it. */
class BudgetWatch {
  readonly latest = new Map<string, PodDisruptionBudget>();
  private waiters: Array<() => void> = [];
  private stopped = false;
  private current?: { stop: () => void };

  constructor(private readonly cluster: Cluster, private readonly path: string) {}

  async start(): Promise<PodDisruptionBudget[]> {
    const list = await this.cluster.get<List<PodDisruptionBudget>>(this.path);
    for (const b of list.items) this.latest.set(budgetKey(b), b);
    void this.follow(list.metadata.resourceVersion);
    return list.items;
  }

  private async follow(resourceVersion: string | undefined): Promise<void> {
    let rv = resourceVersion;
    while (!this.stopped) {
      const w = this.cluster.watch<PodDisruptionBudget>(`${this.path}?watch=1&timeoutSeconds=300${rv ? `&resourceVersion=${rv}` : ''}`, (type, b) => {
        if (type === 'ERROR') return;
        rv = b.metadata.resourceVersion;
        this.latest.set(budgetKey(b), b);
        this.wake();
      });
      this.current = w;
      await w.done.catch(() => undefined);
      if (this.stopped) return;
      await sleep(500);
      rv = undefined; // a broken or expired watch starts again from a fresh list
      const list = await this.cluster.get<List<PodDisruptionBudget>>(this.path).catch(() => undefined);
      if (!list) continue;
      for (const b of list.items) this.latest.set(budgetKey(b), b);
      rv = list.metadata.resourceVersion;
      this.wake();
    }
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }

  /** Resolves at the next change of any budget, after `ms`, or at once on a stop. */
  async changed(ms: number, signal?: AbortSignal): Promise<void> {
    const stop = signal ? sleep(ms, undefined, { signal }).catch(() => undefined) : sleep(ms);
    await Promise.race([new Promise<void>((resolve) => this.waiters.push(resolve)), stop]);
    if (!signal?.aborted) await sleep(SETTLE_MS);
  }

  stop(): void {
    this.stopped = true;
    this.current?.stop();
    this.wake();
  }
}

/** Evicts one budget's pods, as many at a time as it allows; a refused eviction waits for the budget's next change. */
async function evictPaced(watch: BudgetWatch, key: string, pods: Pod[], cluster: Cluster, options: EvictOptions): Promise<void> {
  const queue = [...pods];
  const attempts = new Map<Pod, number>();
  for (const pod of queue) options.progress?.onEvicting?.(pod);
  while (queue.length > 0) {
    // A budget at zero makes no write for the Lease's fence to refuse: the stop is looked at here.
    if (options.signal?.aborted) throw stoppedError(options.signal, `it gave up waiting for PodDisruptionBudget ${key} (${queue.length} pod(s) not evicted)`);
    if (Date.now() >= options.deadline) {
      throw new Error(queue.map((p) => evictionError(p, `global timeout reached: its PodDisruptionBudget ${key} allowed no disruption in time`).message).join('; '));
    }
    const allowed = watch.latest.get(key)?.status?.disruptionsAllowed ?? 0;
    // Unready pods may go while the budget is at 0 (the API decides by its health and unhealthyPodEvictionPolicy).
    const batch = [...queue.filter((p) => !isPodReady(p)), ...queue.filter(isPodReady).slice(0, Math.max(0, allowed))];
    queue.splice(0, queue.length, ...queue.filter((p) => !batch.includes(p)));
    const refused = await Promise.all(
      batch.map(async (pod) => {
        try {
          await postEviction(cluster, pod, options);
          return undefined;
        } catch (e) {
          if (!isRetriableEviction(e)) throw evictionError(pod, (e as Error).message, e);
          const n = (attempts.get(pod) ?? 0) + 1;
          attempts.set(pod, n);
          options.progress?.onRetry?.(pod, (e as Error).message, n);
          return pod;
        }
      }),
    );
    queue.push(...refused.filter((p): p is Pod => p !== undefined));
    if (queue.length > 0) await watch.changed(Math.min(FALLBACK_MS, Math.max(0, options.deadline - Date.now())), options.signal);
  }
}

/**
 * Evicts every pod: those a single PodDisruptionBudget covers paced by that budget (one watch per namespace of the
 * pods: a budget covers pods of its own namespace, and the cluster's other budgets are none of the drain's business),
 * the others at once with kubectl's retries. Resolves when the API accepted every eviction; waiting for the pods to be
 * gone is the caller's (waitForPodsGone).
 */
export async function evictWithinBudgets(cluster: Cluster, pods: Pod[], options: EvictOptions): Promise<void> {
  const group = options.version === 'policy/v1beta1' ? '/apis/policy/v1beta1' : '/apis/policy/v1';
  const namespaces = [...new Set(pods.map((p) => p.metadata.namespace ?? 'default'))];
  const watches = new Map(namespaces.map((ns) => [ns, new BudgetWatch(cluster, `${group}/namespaces/${encodeURIComponent(ns)}/poddisruptionbudgets`)]));
  try {
    const budgets = (await Promise.all([...watches.values()].map((w) => w.start()))).flat();
    const paced = new Map<string, Pod[]>();
    const free: Pod[] = [];
    for (const pod of pods) {
      const covering = budgets.filter((b) => b.metadata.namespace === pod.metadata.namespace && matchesSelector(b.spec.selector, pod.metadata.labels));
      if (covering.length === 1) paced.set(budgetKey(covering[0]!), [...(paced.get(budgetKey(covering[0]!)) ?? []), pod]);
      else free.push(pod);
    }
    const watchOf = (key: string) => watches.get(key.split('/')[0]!)!;
    const results = await Promise.allSettled([...free.map((p) => evictPod(cluster, p, options)), ...[...paced].map(([key, covered]) => evictPaced(watchOf(key), key, covered, cluster, options))]);
    // A stop is said as one (what it gave up), not folded into the pods' failures.
    if (options.signal?.aborted) {
      const stop = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && (r.reason as RunbookError).code === 'stopped');
      throw stop?.reason ?? stoppedError(options.signal, 'it gave up the evictions not yet accepted');
    }
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
    if (failures.length > 0) throw new Error(failures.join('; '));
  } finally {
    for (const w of watches.values()) w.stop();
  }
}
