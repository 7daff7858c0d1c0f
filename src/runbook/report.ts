import type { UnitRun } from '../node/units.js';
import type { AuditSummary } from '../leaks/types.js';
import type { ExitCodeName } from '../errors.js';
import type { StepStatus } from './journal.js';

// The run's outcome, for people (renderReport) and machines (--output json, the Pulumi provider's outputs).
export type RunResult =
  // Each package moved to a higher version, to a lower one, some each way, or none (the runtime only restarted).
  | 'upgraded'
  | 'downgraded'
  | 'changed'
  | 'maintained'
  // No package changed; the node was rebooted (the report's reboot says from which boot to which).
  | 'rebooted'
  | 'nothing-to-do'
  | 'planned'
  | 'rolled-back'
  | 'rollback-failed'
  | 'failed'
  | 'leaks-found'
  | 'could-not-audit'
  | 'failed-after-point-of-no-return'
  | 'lease-lost'
  | 'api-outage'
  | 'stopped';

/** The node as a stopped run left it: what the operator weighs before continuing or rolling back. */
export interface NodeNow {
  cordoned?: boolean;
  /** As systemd has it: a start the boot queued is "starting", an answer that is not systemd's "unknown". */
  kubelet?: UnitRun;
  /** The runtime's units, the same way. */
  runtime?: Record<string, UnitRun>;
  /** The target packages' installed versions ('' where none is cleanly installed). */
  packages?: Record<string, string>;
  /** The run's commands still running on the node, which end there by themselves. */
  running: string[];
  /** What could not be read, said rather than guessed. */
  unread?: string;
  /** The reboot this run asked, not yet seen done: what runs on the node now says nothing of what it boots into. */
  rebooting?: string;
}

export interface StepReport {
  name: string;
  title: string;
  /** done-earlier: a previous process of this run did it; it was not done again. */
  status: StepStatus | 'not-run' | 'planned' | 'done-earlier';
  summary: string;
  actions: string[];
  detail?: Record<string, unknown>;
  durationMs: number;
  error?: string;
}

export interface RunReport {
  node: string;
  runId: string;
  dryRun: boolean;
  resumed: boolean;
  /** run: a new run; resume: a killed run continued; rollback: an unfinished run rolled back (or its rollback finished). */
  mode: 'run' | 'resume' | 'rollback';
  /** Whether the run got as far as making the node schedulable again: past it, nothing is rolled back. */
  pointOfNoReturn: boolean;
  result: RunResult;
  exitCode: number;
  startedAt: string;
  durationMs: number;
  versions: { before: Record<string, string>; target: Record<string, string>; after: Record<string, string> };
  steps: StepReport[];
  rollback: Array<{ step: string; status: 'done' | 'failed' | 'skipped'; summary: string }>;
  backups: string[];
  audit?: AuditSummary;
  error?: { code: ExitCodeName | 'internal'; message: string };
  /** What the operator does next, when the run did not simply finish. */
  next?: string;
  /** Set when the operator stopped the run: the node's state as it stopped. */
  nodeNow?: NodeNow;
  /** The node's boot before the run's reboot and after it (absent: no reboot). */
  reboot?: { before: string; after?: string };
  /**
   * What a resume found undone on the node and did again: a boot the run did not ask (a crash, a power cut), or a
   * kubelet started again (by hand?) after the run stopped it.
   */
  undone?: { why: 'boot' | 'kubelet'; before?: string; after?: string; redone: string[] };
}

const MARK: Record<StepReport['status'], string> = {
  done: 'done',
  'nothing-to-do': 'nothing to do',
  failed: 'FAILED',
  stopped: 'STOPPED',
  'rolled-back': 'rolled back',
  planned: 'planned',
  'not-run': 'not run',
  applying: 'interrupted',
  'rollback-failed': 'ROLLBACK FAILED',
  'done-earlier': 'done earlier',
};

/** How a step's end reads: preflight only looks, so when it changes nothing it "checked" (never "nothing to do"). */
export function statusLabel(step: string, status: StepReport['status']): string {
  return step === 'preflight' && status === 'nothing-to-do' ? 'checked' : MARK[status];
}

/** "cordoned, kubelet stopped, containerd running, containerd 1.6.20~ds1-1+deb12u3, ..." */
export function describeNodeNow(now: NodeNow): string {
  const cordon = now.cordoned === undefined ? 'cordoned: unknown' : now.cordoned ? 'cordoned' : 'schedulable';
  if (now.rebooting) return [cordon, `rebooting (${now.rebooting})`, ...(now.unread ? [now.unread] : [])].join(', ');
  const parts = [
    cordon,
    `kubelet ${now.kubelet ?? 'unknown'}`,
    ...Object.entries(now.runtime ?? {}).map(([u, s]) => `${u} ${s}`),
    ...Object.entries(now.packages ?? {}).map(([p, v]) => `${p} ${v || 'not cleanly installed'}`),
    ...(now.running.length > 0 ? [`still running on the node: ${now.running.join(', ')}`] : []),
    ...(now.unread ? [now.unread] : []),
  ];
  return parts.join(', ');
}

export function renderReport(report: RunReport): string {
  const lines: string[] = [];
  const title = report.dryRun ? 'Dry run (nothing changed)' : 'Run';
  const how = report.mode === 'resume' ? ', resumed' : report.mode === 'rollback' ? ', rollback of an unfinished run' : '';
  lines.push(`${title} on node ${report.node}: ${report.result} (exit ${report.exitCode}) in ${(report.durationMs / 1000).toFixed(1)}s, run ${report.runId}${how}`);
  const versions = Object.entries(report.versions.target).map(([p, target]) => {
    const named = (v: string | undefined) => (v === undefined ? 'unknown' : v || 'not cleanly installed');
    const before = named(report.versions.before[p]);
    if (report.dryRun) return `  ${p}: ${before} -> ${target} (planned)`;
    const after = named(report.versions.after[p]);
    return after === before && after !== target ? `  ${p}: ${before}, unchanged (asked for ${target})` : `  ${p}: ${before} -> ${after}`;
  });
  if (versions.length > 0) lines.push('Packages:', ...versions);
  if (report.reboot) lines.push(`Reboot: boot ${report.reboot.before}${report.reboot.after ? ` -> ${report.reboot.after}` : ', not yet back on a new one'}`);
  const u = report.undone;
  if (u) lines.push(`${u.why === 'boot' ? `The node booted under the run (boot ${u.before} -> ${u.after}, not asked by it)` : 'kubelet ran again though the run had stopped it'}: done again: ${u.redone.join(', ')}`);
  lines.push('Steps:');
  for (const s of report.steps) {
    lines.push(`  ${s.name.padEnd(20)} ${statusLabel(s.name, s.status).padEnd(14)} ${(s.durationMs / 1000).toFixed(1).padStart(6)}s  ${s.summary}`);
    for (const a of s.status === 'planned' ? s.actions : []) lines.push(`      - ${a}`);
    if (s.error) lines.push(`      error: ${s.error}`);
  }
  if (report.rollback.length > 0) {
    lines.push('Rollback:');
    for (const r of report.rollback) lines.push(`  ${r.step.padEnd(20)} ${r.status.padEnd(14)} ${r.summary}`);
  }
  if (report.backups.length > 0) lines.push(`Backups on the node: ${report.backups.join(', ')}`);
  if (report.audit) {
    const a = report.audit;
    const verdict = a.verdict === 'clean' ? 'clean' : a.verdict === 'leaks' ? `${a.findings} finding(s)` : 'COULD NOT AUDIT';
    lines.push(`Leak audit: ${verdict} (${a.addresses ?? `${a.reservations} IP reservation(s)`}, ${a.cacheEntries} cache entries, ${a.checkpoints} checkpoints, ${a.sandboxes} sandboxes)`);
    for (const f of a.top) lines.push(`  - ${f}`);
    for (const u of a.unverifiable) lines.push(`  - could not verify: ${u}`);
    if (a.clusterFindings > 0) lines.push(`  (${a.clusterFindings} cluster-wide finding(s), not this node's: audit-node shows them)`);
  }
  if (report.nodeNow) lines.push(`Node now: ${describeNodeNow(report.nodeNow)}`);
  if (report.error) lines.push(`Error (${report.error.code}): ${report.error.message}`);
  if (report.next) lines.push(`Next: ${report.next}`);
  return lines.join('\n');
}
