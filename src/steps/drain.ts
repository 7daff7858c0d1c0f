import { evictWithinBudgets } from '../cluster/drain/budgeted.js';
import { evictionVersion, waitForPodsGone } from '../cluster/drain/evict.js';
import { planDrain } from '../cluster/drain/plan.js';
import { drainInRounds } from '../cluster/drain/rounds.js';
import { podKey } from '../cluster/pods.js';
import type { Pod } from '../cluster/types.js';
import { RunbookError } from '../errors.js';
import type { Step, StepPlan } from '../runbook/step.js';

export interface DrainPlan extends StepPlan {
  evict: Pod[];
  /** Already terminating: not evicted again, but waited for. */
  waitFor: Pod[];
}

/** kubectl drain, with the plan (classification) apart from the apply (evictions paced by the budgets, and waits). */
export const drain: Step<DrainPlan> = {
  name: 'drain',
  title: 'Drain',
  undo: "nothing to undo: evicted pods are recreated by their controllers elsewhere, and come back once cordon's rollback uncordons",
  async plan(ctx) {
    const { evict, waitFor, skipped, refused } = await planDrain(ctx.cluster, ctx.options.node, ctx.options.drain);
    if (refused) throw new RunbookError('preflight', refused);
    return {
      evict,
      waitFor,
      actions: [...evict.map((p) => `evict ${podKey(p)}`), ...waitFor.map((p) => `wait for ${podKey(p)} (terminating)`)],
      summary: `${evict.length} pod(s) to evict, ${waitFor.length} terminating, ${skipped.length} left in place`,
      detail: { evict: evict.map(podKey), waitFor: waitFor.map(podKey), leftInPlace: skipped },
    };
  },
  async apply(ctx, plan) {
    const deadline = Date.now() + ctx.options.drain.timeoutSeconds * 1000;
    const version = await evictionVersion(ctx.cluster);
    const progress = {
      onRetry: (pod: Pod, reason: string, attempt: number) =>
        attempt === 1 || attempt % 5 === 0 ? ctx.progress(`eviction of ${podKey(pod)} refused (${reason}); retrying`) : undefined,
      onGone: (pod: Pod, ms: number) => ctx.progress(`${podKey(pod)} gone after ${(ms / 1000).toFixed(1)}s`),
      onSkipped: (pod: Pod, s: number) => ctx.progress(`${podKey(pod)} deleted ${s}s ago and still there (a finalizer holds it): not waited for (--skip-wait-for-delete-timeout)`),
    };
    const { node, drain: options } = ctx.options;
    const evicted = await drainInRounds(plan, {
      plan: () => planDrain(ctx.cluster, node, options),
      evict: (pods) => evictWithinBudgets(ctx.cluster, pods, { gracePeriodSeconds: options.gracePeriodSeconds, deadline, version, progress, signal: ctx.stop }),
      waitGone: (pods) => waitForPodsGone(ctx.cluster, node, pods, { deadline, progress, skipWaitForDeleteTimeoutSeconds: options.skipWaitForDeleteTimeoutSeconds, signal: ctx.stop }),
      onLate: (pods, round) => ctx.progress(`${pods.length} pod(s) bound to the node after the cordon, draining them too (round ${round}): ${pods.map(podKey).join(', ')}`),
    });
    return `evicted ${evicted.length} pod(s) (${version})`;
  },
  async verify(ctx) {
    const again = await planDrain(ctx.cluster, ctx.options.node, ctx.options.drain);
    const left = [...again.evict, ...again.waitFor].map(podKey);
    if (left.length > 0 || again.refused) {
      throw new Error(`pods still on the node after the drain: ${[...left, again.refused].filter(Boolean).join('; ')}`);
    }
  },
};
