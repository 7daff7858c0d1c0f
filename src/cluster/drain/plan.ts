import { isNotFound, type Cluster } from '../api.js';
import { listPodsOnNode, podKey } from '../pods.js';
import type { Pod } from '../types.js';
import { classifyPods, refusalMessage, type DrainOptions, type PodVerdict } from './filters.js';

// The drain's plan, as kubectl's GetPodsForDeletion: read once, decided by the pure filters. Preflight and the drain
// step both use it, so preflight refuses exactly what the drain would.
export interface DrainPlanView {
  verdicts: PodVerdict[];
  evict: Pod[];
  /** Already terminating: not evicted again, but waited for. */
  waitFor: Pod[];
  skipped: string[];
  /** kubectl's refusal message, when pods cannot be drained with these flags. */
  refused?: string;
}

/** The DaemonSets that own these pods and exist ("namespace/name"): each read by name, never the cluster's list. */
export async function daemonSetKeys(cluster: Cluster, pods: Pod[]): Promise<Set<string>> {
  const owners = new Set(pods.flatMap((p) => (p.metadata.ownerReferences ?? []).filter((o) => o.kind === 'DaemonSet').map((o) => `${p.metadata.namespace}/${o.name}`)));
  const found = await Promise.all(
    [...owners].map(async (key) => {
      const [namespace, name] = key.split('/') as [string, string];
      const exists = await cluster.get(`/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/daemonsets/${encodeURIComponent(name)}`).then(
        () => true,
        (e: unknown) => (isNotFound(e) ? false : Promise.reject(e)),
      );
      return exists ? [key] : [];
    }),
  );
  return new Set(found.flat());
}

export function drainPlanOf(verdicts: PodVerdict[]): DrainPlanView {
  return {
    verdicts,
    evict: verdicts.filter((v) => v.verdict.action === 'evict').map((v) => v.pod),
    waitFor: verdicts.filter((v) => v.verdict.action === 'wait').map((v) => v.pod),
    skipped: verdicts.filter((v) => v.verdict.action === 'skip').map((v) => `${podKey(v.pod)} (${(v.verdict as { reason: string }).reason})`),
    refused: refusalMessage(verdicts),
  };
}

export async function planDrain(cluster: Cluster, node: string, options: DrainOptions): Promise<DrainPlanView> {
  const pods = await listPodsOnNode(cluster, node);
  return drainPlanOf(classifyPods(pods, options, await daemonSetKeys(cluster, pods)));
}

/**
 * Pods whose grace period outlasts the drain's timeout: the drain would time out on them by design. The grace that
 * counts is --grace-period when given, else the pod's own terminationGracePeriodSeconds (30 by default).
 */
export function graceOutlastsTimeout(pods: Pod[], options: DrainOptions): string[] {
  return pods.flatMap((p) => {
    const grace = options.gracePeriodSeconds >= 0 ? options.gracePeriodSeconds : (p.spec.terminationGracePeriodSeconds ?? 30);
    return grace >= options.timeoutSeconds ? [`${podKey(p)} (grace ${grace}s)`] : [];
  });
}
