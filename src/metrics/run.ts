import { statusLabel, type RunReport } from '../runbook/report.js';
import { Exposition } from './gauges.js';

// The last run of the runbook on a node, as Prometheus gauges for node-exporter's textfile collector.
export async function runMetrics(report: RunReport, finishedAt = Date.now()): Promise<string> {
  const m = new Exposition();
  const node = { node: report.node };
  m.gauge('node_maint_last_run_info', 'The last run on the node: its id, result and versions (value 1).', ['node', 'run_id', 'result', 'mode', 'from', 'to']).set(
    { ...node, run_id: report.runId, result: report.result, mode: report.mode, from: pairs(report.versions.before), to: pairs(report.versions.target) },
    1,
  );
  m.gauge('node_maint_last_run_success', '1 when the last run ended with exit 0 (upgraded or nothing to do), else 0.', ['node']).set(node, report.exitCode === 0 ? 1 : 0);
  m.gauge('node_maint_last_run_exit_code', 'The exit code of the last run (README: exit codes).', ['node']).set(node, report.exitCode);
  m.gauge('node_maint_last_run_timestamp_seconds', 'When the last run ended.', ['node']).set(node, Math.round(finishedAt / 1000));
  m.gauge('node_maint_last_run_duration_seconds', 'How long the last run took.', ['node']).set(node, report.durationMs / 1000);
  const steps = m.gauge('node_maint_last_run_step_duration_seconds', 'How long each step of the last run took, with how it ended.', ['node', 'step', 'status']);
  // The status as the report's text names it ("checked" for a preflight that changed nothing), in one word.
  for (const s of report.steps) if (s.status !== 'not-run') steps.set({ ...node, step: s.name, status: statusLabel(s.name, s.status).replace(/ /g, '-').toLowerCase() }, s.durationMs / 1000);
  return m.text();
}

const pairs = (v: Record<string, string>) => Object.entries(v).map(([p, x]) => `${p}=${x}`).join(',');
