import { describe, expect, it } from 'vitest';
import { describeAlerts, holdingAlerts, type PrometheusAlert } from '../../../../src/fleet/gates/alerts.js';

// As Prometheus 2.42's GET /api/v1/alerts lists them.
const alerts: PrometheusAlert[] = [
  { labels: { alertname: 'Watchdog', severity: 'none' }, state: 'firing', activeAt: '2026-11-25T06:00:00Z' },
  { labels: { alertname: 'NodeMaintLeakedIPs', severity: 'critical', instance: 'n1:9100' }, state: 'firing', activeAt: '2026-11-25T06:10:00Z' },
  { labels: { alertname: 'KubePodCrashLooping', severity: 'warning' }, state: 'pending' },
];

describe('the alert gate', () => {
  it('holds on firing alerts of the listed names, never on pending ones or an unlisted Watchdog', () => {
    expect(holdingAlerts({ names: ['NodeMaintLeakedIPs', 'KubePodCrashLooping'], labels: {} }, alerts).map((a) => a.labels.alertname)).toEqual(['NodeMaintLeakedIPs']);
    expect(holdingAlerts({ names: ['KubePodCrashLooping'], labels: {} }, alerts)).toEqual([]);
  });

  it('with labels, every label must match; with names too, both', () => {
    expect(holdingAlerts({ names: [], labels: { severity: 'critical' } }, alerts).map((a) => a.labels.alertname)).toEqual(['NodeMaintLeakedIPs']);
    expect(holdingAlerts({ names: ['Watchdog'], labels: { severity: 'critical' } }, alerts)).toEqual([]);
  });

  it('names each holding alert with its labels and since when', () => {
    expect(describeAlerts([alerts[1]!])).toBe('NodeMaintLeakedIPs{severity=critical,instance=n1:9100} since 2026-11-25T06:10:00Z');
  });
});
