import { RunbookError } from '../errors.js';
import { settledLiveAudit } from '../leaks/index.js';
import { addressWords, summarize, type AuditReport } from '../leaks/types.js';
import type { RunContext } from './step.js';

/**
 * The leak audit once kubelet has settled (it may still be recreating DaemonSet sandboxes or collecting): a finding
 * must persist to count. Throws leaksFound with the report, or couldNotAudit when a check could not look: a node
 * that cannot be checked is never called clean.
 */
export async function settledAudit(ctx: RunContext): Promise<AuditReport> {
  const { skipWaitForDeleteTimeoutSeconds } = ctx.options.drain;
  const report = await settledLiveAudit({ cluster: ctx.cluster, transport: ctx.reader, node: ctx.options.node, skipWaitForDeleteTimeoutSeconds, signal: ctx.stop });
  if (report.verdict === 'leaks') {
    throw new RunbookError('leaksFound', `${report.findings.length} leak(s) on ${ctx.options.node}: ${summarize(report, 5).top.join('; ')}`, { details: report });
  }
  if (report.verdict === 'unverifiable') {
    throw new RunbookError('couldNotAudit', `could not audit ${ctx.options.node}: ${report.unverifiable.join('; ')}`, { details: report });
  }
  return report;
}

export const cleanSummary = (report: AuditReport) =>
  `clean: ${addressWords(report)}, ${report.counts.cacheEntries} cache entr(ies), ${report.counts.sandboxes} sandbox(es), all live`;
