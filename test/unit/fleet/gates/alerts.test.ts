import { describe, expect, it } from 'vitest';
import { alertNodes, describeAlerts, holdingAlerts, splitByMaintained, type PrometheusAlert } from '../../../../src/fleet/gates/alerts.js';

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

describe('alerts about the nodes the fleet is maintaining', () => {
  const firing = (alertname: string, labels: Record<string, string>): PrometheusAlert => ({ labels: { alertname, ...labels }, state: 'firing' });
  it('do not hold the next node; alerts about other nodes, or about none, still do', () => {
    const alerts = [
      firing('KubeNodeNotReady', { node: 'n1' }),
      firing('NodeFilesystemFull', { instance: 'n2:9100' }),
      firing('KubeNodeNotReady', { node: 'n9' }),
      firing('ClusterDown', {}),
    ];
    const { holding, excused } = splitByMaintained(alerts, ['n1', 'n2']);
    expect(excused.map((a) => a.labels.alertname)).toEqual(['KubeNodeNotReady', 'NodeFilesystemFull']);
    expect(holding.map((a) => `${a.labels.alertname}${a.labels.node ? `{${a.labels.node}}` : ''}`)).toEqual(['KubeNodeNotReady{n9}', 'ClusterDown']);
    expect(alertNodes(firing('X', { kubernetes_node: 'n3', instance: '10.0.0.3:10250' }))).toEqual(['n3', '10.0.0.3']);
  });
});
