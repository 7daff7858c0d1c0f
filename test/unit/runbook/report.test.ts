import { describe, expect, it } from 'vitest';
import { renderReport, type RunReport } from '../../../src/runbook/report.js';

const report = (over: Partial<RunReport>): RunReport => ({
  node: 'n1', runId: 'r1', dryRun: false, resumed: false, mode: 'run', pointOfNoReturn: false, result: 'upgraded', exitCode: 0,
  startedAt: '', durationMs: 1000, versions: { before: {}, target: {}, after: {} }, steps: [], rollback: [], backups: [], ...over,
});

// Every word the report prints is what happened: the versions as they are, the node as a stop left it.
describe('the text report', () => {
  it('a run refused before it changed anything says what is installed and what was asked, not "not installed"', () => {
    const text = renderReport(report({ result: 'failed', exitCode: 10, versions: { before: { containerd: '1.6.20~ds1-1+deb12u2' }, target: { containerd: '1.6.99~ds1-1' }, after: { containerd: '1.6.20~ds1-1+deb12u2' } } }));
    expect(text).toContain('  containerd: 1.6.20~ds1-1+deb12u2, unchanged (asked for 1.6.99~ds1-1)');
  });

  it('a run that changed the versions shows before and after; a dry run the plan', () => {
    const versions = { before: { containerd: 'a1' }, target: { containerd: 'b2' }, after: { containerd: 'b2' } };
    expect(renderReport(report({ versions }))).toContain('  containerd: a1 -> b2');
    expect(renderReport(report({ dryRun: true, result: 'planned', versions: { ...versions, after: {} } }))).toContain('  containerd: a1 -> b2 (planned)');
  });

  it('a stopped run says the node as it left it, and both ways on', () => {
    const text = renderReport(report({
      result: 'stopped', exitCode: 18, error: { code: 'stopped', message: 'stopped by SIGINT: it gave up waiting for the evicted pods to terminate' },
      nodeNow: { cordoned: true, kubelet: 'running', runtime: { containerd: 'running' }, packages: { containerd: 'a1' }, running: [] },
      next: 'run the same command again to continue where it stopped (from drain), or run it with --rollback to undo what the run did',
    }));
    expect(text).toContain('Node now: cordoned, kubelet running, containerd running, containerd a1');
    expect(text).toContain('Next: run the same command again to continue where it stopped (from drain), or run it with --rollback');
  });

  it('a run stopped while the node reboots says it reboots, not the units it had a moment before', () => {
    const text = renderReport(report({
      result: 'stopped', exitCode: 18, error: { code: 'stopped', message: 'stopped by SIGINT: it gave up waiting for n1 to come back from its reboot' },
      nodeNow: { cordoned: true, running: [], rebooting: 'the reboot this run asked at 2026-11-27T20:31:02Z, not yet seen on a new boot', unread: 'kubelet, the runtime and the packages not read while it reboots' },
    }));
    expect(text).toContain('Node now: cordoned, rebooting (the reboot this run asked at 2026-11-27T20:31:02Z, not yet seen on a new boot), kubelet, the runtime and the packages not read while it reboots\nError (stopped)');
    expect(text).not.toContain('kubelet unknown');
  });
});
