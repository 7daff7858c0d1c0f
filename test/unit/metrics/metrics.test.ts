import { describe, expect, it } from 'vitest';
import type { AuditReport } from '../../../src/leaks/types.js';
import { auditMetrics } from '../../../src/metrics/audit.js';
import { runMetrics } from '../../../src/metrics/run.js';
import type { RunReport } from '../../../src/runbook/report.js';

const audit: AuditReport = {
  node: 'real-node',
  takenAt: 1_764_050_000,
  verdict: 'leaks',
  unverifiable: [],
  findings: [
    { class: 'ip-reservation-leaked', severity: 'leak', message: '10.244.1.7 held by a dead container', evidence: { ip: '10.244.1.7', network: 'kubenet' } },
    { class: 'stuck-terminating', severity: 'leak', message: 'demo/web-1 stuck', evidence: { pod: 'demo/web-1' } },
  ],
  clusterFindings: [],
  ipamScope: 'node',
  leftAlone: [],
  ranges: [
    { network: 'kubenet', cidr: '10.244.1.0/25', first: '10.244.1.2', last: '10.244.1.126', source: 'PodCIDR', usable: 125, allocated: 9, inUse: 8, leaked: 1 },
    { network: 'odd', cidr: null, reason: 'no config found', allocated: 2, inUse: 0, leaked: 2 },
  ],
  counts: { reservations: 11, cacheEntries: 8, checkpoints: 8, sandboxes: 10, notReadySandboxes: 2, pods: 8 },
};

/** The value of one sample, by its exact name and labels as exposed. */
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('the audit as Prometheus gauges', () => {
  it('has the verdict one-hot, every class (0 when absent), per-range usage and leaks, sandboxes and stuck pods', async () => {
    const text = await auditMetrics(audit);
    expect(sample(text, 'node_maint_audit_verdict{node="real-node",verdict="leaks"}')).toBe(1);
    expect(sample(text, 'node_maint_audit_verdict{node="real-node",verdict="clean"}')).toBe(0);
    expect(sample(text, 'node_maint_audit_findings{node="real-node",class="ip-reservation-leaked"}')).toBe(1);
    expect(sample(text, 'node_maint_audit_findings{node="real-node",class="calico-ip-conflict"}')).toBe(0);
    expect(sample(text, 'node_maint_ip_leaked{node="real-node",network="kubenet",range="10.244.1.0/25"}')).toBe(1);
    expect(sample(text, 'node_maint_ip_range_usable{node="real-node",network="kubenet",range="10.244.1.0/25"}')).toBe(125);
    expect(sample(text, 'node_maint_ip_range_in_use{node="real-node",network="kubenet",range="10.244.1.0/25"}')).toBe(8);
    // A range whose size is unknown has no "usable", and says so in its label.
    expect(sample(text, 'node_maint_ip_leaked{node="real-node",network="odd",range="unknown"}')).toBe(2);
    expect(sample(text, 'node_maint_ip_range_usable{node="real-node",network="odd",range="unknown"}')).toBeUndefined();
    expect(sample(text, 'node_maint_sandboxes{node="real-node",state="not_ready"}')).toBe(2);
    expect(sample(text, 'node_maint_sandboxes{node="real-node",state="ready"}')).toBe(8);
    expect(sample(text, 'node_maint_pods_stuck_terminating{node="real-node"}')).toBe(1);
    expect(text).toContain('# TYPE node_maint_ip_leaked gauge');
  });
});

describe('the last run as Prometheus gauges', () => {
  it('has its result, exit code, versions and each step run with its duration', async () => {
    const report = {
      node: 'fleet-1',
      runId: 'r-1',
      mode: 'run',
      dryRun: false,
      result: 'rolled-back',
      exitCode: 11,
      durationMs: 42_500,
      versions: { before: { containerd: '1.6.20~ds1-1+deb12u2' }, target: { containerd: '1.6.20~ds1-1+deb12u3' }, after: {} },
      steps: [
        { name: 'preflight', status: 'nothing-to-do', durationMs: 1200 },
        { name: 'upgrade-runtime', status: 'rolled-back', durationMs: 30_000 },
        { name: 'verify', status: 'not-run', durationMs: 0 },
      ],
    } as unknown as RunReport;
    const text = await runMetrics(report, 1_764_050_000_000);
    expect(sample(text, 'node_maint_last_run_info{node="fleet-1",run_id="r-1",result="rolled-back",mode="run",from="containerd=1.6.20~ds1-1+deb12u2",to="containerd=1.6.20~ds1-1+deb12u3"}')).toBe(1);
    expect(sample(text, 'node_maint_last_run_success{node="fleet-1"}')).toBe(0);
    expect(sample(text, 'node_maint_last_run_exit_code{node="fleet-1"}')).toBe(11);
    expect(sample(text, 'node_maint_last_run_timestamp_seconds{node="fleet-1"}')).toBe(1_764_050_000);
    expect(sample(text, 'node_maint_last_run_step_duration_seconds{node="fleet-1",step="upgrade-runtime",status="rolled-back"}')).toBe(30);
    expect(text).not.toContain('step="verify"');
    // As the report's text says it: a preflight that changed nothing "checked".
    expect(sample(text, 'node_maint_last_run_step_duration_seconds{node="fleet-1",step="preflight",status="checked"}')).toBe(1.2);
  });
});
