import { summarize, type AuditReport } from '../leaks/types.js';
import { auditLiveNode } from '../leaks/index.js';
import type { Step, StepPlan } from '../runbook/step.js';
import { cleanSummary, settledAudit } from '../runbook/proof.js';

export interface VerifyPlan extends StepPlan {
  audit?: AuditReport;
}

/**
 * The leak audit once more, after the node took pods again, read-only: no leaked IP, cache entry, checkpoint or
 * sandbox, no pod stuck Terminating. Past the point of no return: a finding is reported (exit 13), never rolled back.
 */
export const verifyNode: Step<VerifyPlan> = {
  name: 'verify',
  title: 'Verify nothing leaked',
  undo: 'none: it only looks, after the point of no return',
  alwaysApply: true,
  async plan(ctx) {
    if (!ctx.options.dryRun) return { actions: [], summary: 'will audit the node for leaks' };
    const { report } = await auditLiveNode({ cluster: ctx.cluster, transport: ctx.reader, node: ctx.options.node });
    return { actions: [], audit: report, summary: `audit now: ${report.verdict === 'clean' ? 'clean' : report.verdict === 'leaks' ? `${report.findings.length} finding(s)` : `could not audit (${report.unverifiable.join('; ')})`}`, detail: { audit: summarize(report) } };
  },
  async apply(ctx, plan) {
    const report = await settledAudit(ctx);
    plan.audit = report;
    plan.detail = { audit: summarize(report) };
    return cleanSummary(report);
  },
  async verify() {},
};
