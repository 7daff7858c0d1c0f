import { ExitCode } from '../errors.js';
import type { AuditReport, AuditVerdict, Finding, RangeUsage } from '../leaks/types.js';

// The audit for people: per range usage, what could not be checked, this node's findings grouped by class with their
// evidence, then the cluster-wide findings, which are shown on every node but count against none.
export function renderAudit(report: AuditReport): string {
  const lines = [`Leak audit of node ${report.node}: ${headline(report)}`];
  const c = report.counts;
  lines.push(`  ${c.reservations} IP reservation(s), ${c.cacheEntries} CNI cache entr(ies), ${c.checkpoints} checkpoint(s), ${c.sandboxes} sandbox(es) (${c.notReadySandboxes} not ready), ${c.pods} pod(s) bound`);
  for (const r of report.ranges) lines.push(`  ${rangeLine(r)}`);
  for (const line of report.leftAlone) lines.push(`  ${line}`);
  if (report.notRead) lines.push(`  not read: ${report.notRead}`);
  if (report.unverifiable.length > 0) {
    lines.push('Could not verify:');
    for (const reason of report.unverifiable) lines.push(`  - ${reason}`);
  }
  lines.push(...findingLines(report.findings));
  if (report.clusterFindings.length > 0) {
    lines.push(`Cluster-wide (${report.clusterFindings.length}, not this node's: they do not fail its audit):`);
    lines.push(...findingLines(report.clusterFindings).flatMap((l) => l.split('\n')).map((l) => `  ${l}`));
  }
  return lines.join('\n');
}

/** audit-node's exit code: only this node's findings (13) and a blind check (15) fail it. */
export function auditExitCode(verdict: AuditVerdict): number {
  return verdict === 'clean' ? ExitCode.ok : verdict === 'leaks' ? ExitCode.leaksFound : ExitCode.couldNotAudit;
}

function headline(report: AuditReport): string {
  if (report.verdict === 'leaks') return `${report.findings.length} finding(s)`;
  return report.verdict === 'unverifiable' ? 'could not verify (see below): not clean' : 'clean';
}

function rangeLine(r: RangeUsage): string {
  if (r.cidr === null) return `range ${r.network} unknown (${r.reason}): allocated ${r.allocated}, in use ${r.inUse}, leaked ${r.leaked}`;
  return `range ${r.network} ${r.cidr}: usable ${r.usable}, allocated ${r.allocated}, in use ${r.inUse}, leaked ${r.leaked} (${r.first}-${r.last}, from ${r.source})`;
}

function findingLines(findings: Finding[]): string[] {
  const lines: string[] = [];
  const byClass = new Map<string, Finding[]>();
  for (const f of findings) byClass.set(f.class, [...(byClass.get(f.class) ?? []), f]);
  for (const [cls, group] of byClass) {
    lines.push(`${cls} (${group.length}):`);
    for (const f of group.slice(0, 200)) {
      const ev = Object.entries(f.evidence)
        .filter(([, v]) => v !== undefined && typeof v !== 'object')
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      lines.push(`  [${f.severity}] ${f.message}${ev ? `\n      ${ev}` : ''}`);
    }
    if (group.length > 200) lines.push(`  ... and ${group.length - 200} more (--output json lists all)`);
  }
  return lines;
}
