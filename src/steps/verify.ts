import { auditLiveNode } from '../leaks/index.js';
import { summarize, type AuditReport } from '../leaks/types.js';
import { RunbookError } from '../runbook/errors.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';

export interface VerifyPlan extends StepPlan {
  audit?: AuditReport;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function audit(ctx: RunContext): Promise<AuditReport> {
  const { report } = await auditLiveNode({ cluster: ctx.cluster, transport: ctx.transport, node: ctx.options.node });
  return report;
}

/** The leak audit, read-only: no leaked IP, cache entry, checkpoint or sandbox, no pod stuck Terminating. */
export const verifyNode: Step<VerifyPlan> = {
  name: 'verify',
  title: 'Verify nothing leaked',
  alwaysApply: true,
  async plan(ctx) {
    if (!ctx.options.dryRun) return { actions: [], summary: 'will audit the node for leaks' };
    const report = await audit(ctx);
    return { actions: [], audit: report, summary: `audit now: ${report.findings.length === 0 ? 'clean' : `${report.findings.length} finding(s)`}`, detail: { audit: summarize(report) } };
  },
  async apply(ctx, plan) {
    // Kubelet may still be settling (recreating DaemonSet sandboxes, collecting): a finding must persist to count.
    let report = await audit(ctx);
    for (let i = 0; i < 10 && report.findings.length > 0; i++) {
      await sleep(3_000);
      report = await audit(ctx);
    }
    plan.audit = report;
    plan.detail = { audit: summarize(report) };
    if (report.findings.length > 0) {
      throw new RunbookError('leaksFound', `${report.findings.length} leak(s) on ${ctx.options.node}: ${summarize(report, 5).top.join('; ')}`, { details: report });
    }
    return `clean: ${report.counts.reservations} IP reservation(s), ${report.counts.cacheEntries} cache entr(ies), ${report.counts.sandboxes} sandbox(es), all live`;
  },
  async verify() {},
};
