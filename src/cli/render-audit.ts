import type { AuditReport, Finding } from '../leaks/types.js';

// The audit for people: per range usage, then findings grouped by class with their evidence.
export function renderAudit(report: AuditReport): string {
  const lines = [`Leak audit of node ${report.node}: ${report.findings.length === 0 ? 'clean' : `${report.findings.length} finding(s)`}`];
  const c = report.counts;
  lines.push(`  ${c.reservations} IP reservation(s), ${c.cacheEntries} CNI cache entr(ies), ${c.checkpoints} checkpoint(s), ${c.sandboxes} sandbox(es) (${c.notReadySandboxes} not ready), ${c.pods} pod(s) bound`);
  for (const r of report.ranges) {
    lines.push(`  range ${r.network} ${r.cidr || '(no PodCIDR)'}: usable ${r.usable}, allocated ${r.allocated}, in use ${r.inUse}, leaked ${r.leaked}`);
  }
  const byClass = new Map<string, Finding[]>();
  for (const f of report.findings) byClass.set(f.class, [...(byClass.get(f.class) ?? []), f]);
  for (const [cls, findings] of byClass) {
    lines.push(`${cls} (${findings.length}):`);
    for (const f of findings.slice(0, 200)) {
      const ev = Object.entries(f.evidence)
        .filter(([, v]) => v !== undefined && typeof v !== 'object')
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      lines.push(`  [${f.severity}] ${f.message}${ev ? `\n      ${ev}` : ''}`);
    }
    if (findings.length > 200) lines.push(`  ... and ${findings.length - 200} more (--output json lists all)`);
  }
  return lines.join('\n');
}
