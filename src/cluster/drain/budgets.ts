import { isPodReady, podKey } from '../pods.js';
import { matchesSelector } from '../selector.js';
import type { Pod, PodDisruptionBudget } from '../types.js';

// Whether PodDisruptionBudgets let every pod that must go be evicted, decided before anything changes.
export interface BudgetBlock {
  pod: string;
  budgets: string[];
  reason: string;
  /** True when the budget can never allow it as written (maxUnavailable 0, minAvailable all); false when it may once
   *  replacement pods are ready (the budget is only at 0 for now). */
  permanent: boolean;
}

/** A budget that, as written, can never allow a voluntary disruption. */
export function forbidsAllDisruption(budget: PodDisruptionBudget): boolean {
  const { maxUnavailable, minAvailable } = budget.spec;
  if (maxUnavailable === 0 || maxUnavailable === '0%') return true;
  if (minAvailable === '100%') return true;
  const expected = budget.status?.expectedPods;
  return typeof minAvailable === 'number' && expected !== undefined && minAvailable >= expected;
}

const budgetKey = (b: PodDisruptionBudget) => `${b.metadata.namespace}/${b.metadata.name}`;

/**
 * A pod is blocked when a budget that covers it allows no disruption now (the eviction API would answer 429 until
 * something else changes), or when more than one budget covers it (the API refuses those evictions with a 500).
 * An unready pod may go when the budget is healthy enough or its policy is AlwaysAllow, as the API decides.
 */
export function budgetBlocks(pods: Pod[], budgets: PodDisruptionBudget[]): BudgetBlock[] {
  const blocks: BudgetBlock[] = [];
  for (const pod of pods) {
    const covering = budgets.filter(
      (b) => b.metadata.namespace === pod.metadata.namespace && matchesSelector(b.spec.selector, pod.metadata.labels),
    );
    if (covering.length > 1) {
      blocks.push({ pod: podKey(pod), budgets: covering.map(budgetKey), reason: 'more than one PodDisruptionBudget selects it', permanent: true });
      continue;
    }
    const budget = covering[0];
    if (!budget) continue;
    const allowed = budget.status?.disruptionsAllowed ?? 0;
    if (allowed > 0) continue;
    if (!isPodReady(pod)) {
      const healthy = (budget.status?.currentHealthy ?? 0) >= (budget.status?.desiredHealthy ?? 0);
      if (budget.spec.unhealthyPodEvictionPolicy === 'AlwaysAllow' || healthy) continue;
    }
    const permanent = forbidsAllDisruption(budget);
    blocks.push({
      pod: podKey(pod),
      budgets: [budgetKey(budget)],
      reason: permanent ? 'its PodDisruptionBudget allows no disruption' : `its PodDisruptionBudget allows no disruption now (${budget.status?.currentHealthy ?? 0} healthy, ${budget.status?.desiredHealthy ?? 0} needed)`,
      permanent,
    });
  }
  return blocks;
}

export function blockMessage(blocks: BudgetBlock[]): string {
  return blocks.map((b) => `${b.pod} (${b.budgets.join(', ')}: ${b.reason})`).join('; ');
}
