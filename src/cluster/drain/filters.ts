import { isTerminal, podKey } from '../pods.js';
import type { Pod } from '../types.js';

// kubectl drain's pod classification (k8s.io/kubectl/pkg/drain/filters.go), as small pure filters in its order.
export interface DrainOptions {
  ignoreDaemonSets: boolean;
  deleteEmptyDirData: boolean;
  force: boolean;
  /** Seconds; negative uses each pod's own terminationGracePeriodSeconds, as kubectl's -1. */
  gracePeriodSeconds: number;
  /** One deadline for evictions and waits, in seconds. */
  timeoutSeconds: number;
  /**
   * kubectl's --skip-wait-for-delete-timeout: a pod whose deletionTimestamp is more than this many seconds past (a
   * finalizer holds it) is neither waited for nor counted as stuck; 0 waits for every pod.
   */
  skipWaitForDeleteTimeoutSeconds: number;
}

export const DEFAULT_DRAIN_OPTIONS: DrainOptions = {
  ignoreDaemonSets: false,
  deleteEmptyDirData: false,
  force: false,
  gracePeriodSeconds: -1,
  timeoutSeconds: 600,
  skipWaitForDeleteTimeoutSeconds: 0,
};

export type Verdict =
  | { action: 'evict'; warning?: string }
  | { action: 'skip'; reason: string }
  | { action: 'wait'; reason: string }
  | { action: 'refuse'; reason: string };

export interface PodVerdict {
  pod: Pod;
  verdict: Verdict;
}

type Filter = (pod: Pod, ctx: FilterContext) => Verdict | undefined;
interface FilterContext {
  options: DrainOptions;
  nowMs: number;
  /** "namespace/name" of DaemonSets that exist; a DaemonSet pod whose owner is gone is an orphan. */
  daemonSets: Set<string>;
}

const controllerOf = (pod: Pod) => pod.metadata.ownerReferences?.find((o) => o.controller);

/** Seconds since the pod's deletionTimestamp when it is past the skip timeout (kubectl's skipDeletedFilter), else undefined. */
export function deletedLongAgo(pod: Pod, options: Pick<DrainOptions, 'skipWaitForDeleteTimeoutSeconds'>, nowMs: number): number | undefined {
  const since = pod.metadata.deletionTimestamp ? Math.floor((nowMs - Date.parse(pod.metadata.deletionTimestamp)) / 1000) : undefined;
  return options.skipWaitForDeleteTimeoutSeconds > 0 && since !== undefined && since > options.skipWaitForDeleteTimeoutSeconds ? since : undefined;
}

const skipDeleted: Filter = (pod, { options, nowMs }) => {
  const since = deletedLongAgo(pod, options, nowMs);
  return since === undefined ? undefined : { action: 'skip', reason: `deleted ${since}s ago, past --skip-wait-for-delete-timeout` };
};

const alreadyDeleting: Filter = (pod) =>
  pod.metadata.deletionTimestamp ? { action: 'wait', reason: 'already terminating' } : undefined;

const daemonSetPods: Filter = (pod, { options, daemonSets }) => {
  const owner = controllerOf(pod);
  if (owner?.kind !== 'DaemonSet' || isTerminal(pod)) return undefined;
  if (!daemonSets.has(`${pod.metadata.namespace}/${owner.name}`)) {
    return options.force
      ? { action: 'evict', warning: 'orphaned DaemonSet pod' }
      : { action: 'refuse', reason: 'DaemonSet-managed Pods whose DaemonSet is gone (use --force to override)' };
  }
  return options.ignoreDaemonSets
    ? { action: 'skip', reason: 'DaemonSet-managed' }
    : { action: 'refuse', reason: 'DaemonSet-managed Pods (use --ignore-daemonsets to ignore)' };
};

const mirrorPods: Filter = (pod) =>
  pod.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined ? { action: 'skip', reason: 'mirror (static) pod' } : undefined;

const localStorage: Filter = (pod, { options }) => {
  if (isTerminal(pod) || !pod.spec.volumes?.some((v) => v.emptyDir !== undefined)) return undefined;
  return options.deleteEmptyDirData ? undefined : { action: 'refuse', reason: 'Pods with local storage (use --delete-emptydir-data to override)' };
};

const unreplicated: Filter = (pod, { options }) => {
  if (isTerminal(pod) || controllerOf(pod)) return undefined;
  return options.force ? { action: 'evict', warning: 'no controller: it will not come back' } : { action: 'refuse', reason: 'Pods that declare no controller (use --force to override)' };
};

const FILTERS: Filter[] = [skipDeleted, alreadyDeleting, daemonSetPods, mirrorPods, localStorage, unreplicated];

export function classifyPods(pods: Pod[], options: DrainOptions, daemonSets: Set<string>, nowMs = Date.now()): PodVerdict[] {
  return pods.map((pod) => {
    let warning: string | undefined;
    for (const filter of FILTERS) {
      const verdict = filter(pod, { options, daemonSets, nowMs });
      if (!verdict) continue;
      if (verdict.action === 'evict') {
        warning = verdict.warning;
        continue;
      }
      return { pod, verdict };
    }
    return { pod, verdict: { action: 'evict', ...(warning ? { warning } : {}) } };
  });
}

/** kubectl's aggregate: "cannot delete <reason>: ns/a, ns/b; ..." or undefined when nothing is refused. */
export function refusalMessage(verdicts: PodVerdict[]): string | undefined {
  const byReason = new Map<string, string[]>();
  for (const { pod, verdict } of verdicts) {
    if (verdict.action !== 'refuse') continue;
    byReason.set(verdict.reason, [...(byReason.get(verdict.reason) ?? []), podKey(pod)]);
  }
  if (byReason.size === 0) return undefined;
  return [...byReason].map(([reason, pods]) => `cannot delete ${reason}: ${pods.join(', ')}`).join('; ');
}
