import { getNode, setUnschedulable } from '../cluster/nodes.js';
import { earlierStepActs, type RunContext, type Step } from '../runbook/step.js';

/** Cordons only a schedulable node, and remembers that we did: only then will we uncordon. */
export const cordon: Step = {
  name: 'cordon',
  title: 'Cordon',
  undo: 'uncordon, only if this run cordoned it (a node cordoned before the run stays cordoned)',
  async plan(ctx) {
    const node = await getNode(ctx.cluster, ctx.options.node);
    if (node.spec.unschedulable) {
      return { actions: [], summary: ctx.journal.cordonedByUs ? 'cordoned by this run already' : 'already cordoned (by someone else: it stays cordoned)' };
    }
    return { actions: [`cordon ${ctx.options.node}`], summary: 'will cordon' };
  },
  async apply(ctx) {
    // Recorded before the patch: if we die right after it, the resumed run still knows the cordon is ours.
    ctx.journal.cordonedByUs = true;
    await ctx.saveJournal();
    await setUnschedulable(ctx.cluster, ctx.options.node, true);
    return 'cordoned';
  },
  async verify(ctx) {
    const node = await getNode(ctx.cluster, ctx.options.node);
    if (!node.spec.unschedulable) throw new Error(`${ctx.options.node} is still schedulable`);
  },
  rollback: uncordonIfOurs,
};

export async function uncordonIfOurs(ctx: RunContext): Promise<string> {
  if (!ctx.journal.cordonedByUs) return 'not cordoned by this run: left as it was';
  await setUnschedulable(ctx.cluster, ctx.options.node, false);
  ctx.journal.cordonedByUs = false;
  await ctx.saveJournal();
  return 'uncordoned';
}

/** The point of no return: once the node may take pods, nothing is rolled back. */
export const uncordon: Step = {
  name: 'uncordon',
  title: 'Uncordon',
  undo: 'none: the point of no return; past it a failure is reported (exit 14) and nothing is downgraded',
  async plan(ctx) {
    const ours = ctx.options.dryRun ? earlierStepActs(ctx, 'cordon') : ctx.journal.cordonedByUs;
    if (!ours) return { actions: [], summary: ctx.journal.prior?.unschedulable ? 'was cordoned before the run: stays cordoned' : 'not cordoned by this run' };
    return { actions: [`uncordon ${ctx.options.node}`], summary: 'will uncordon (this run cordoned it)' };
  },
  async apply(ctx) {
    return uncordonIfOurs(ctx);
  },
  async verify(ctx) {
    const node = await getNode(ctx.cluster, ctx.options.node);
    if (node.spec.unschedulable && !ctx.journal.prior?.unschedulable) throw new Error(`${ctx.options.node} is still cordoned`);
  },
};
