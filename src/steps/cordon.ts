import { getNode, setUnschedulable } from '../cluster/nodes.js';
import { earlierStepActs, type RunContext, type Step } from '../runbook/step.js';

/** Cordons only a schedulable node, and remembers that we did: only then will we uncordon. */
export const cordon: Step = {
  name: 'cordon',
  title: 'Cordon',
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
  async rollback(ctx: RunContext) {
    return uncordonIfOurs(ctx);
  },
};

export async function uncordonIfOurs(ctx: RunContext): Promise<string> {
  if (!ctx.journal.cordonedByUs) return 'not cordoned by this run: left as it was';
  const node = await getNode(ctx.cluster, ctx.options.node);
  if (node.spec.unschedulable) await setUnschedulable(ctx.cluster, ctx.options.node, false);
  ctx.journal.cordonedByUs = false;
  await ctx.saveJournal();
  return 'uncordoned';
}

export const uncordon: Step = {
  name: 'uncordon',
  title: 'Uncordon',
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
