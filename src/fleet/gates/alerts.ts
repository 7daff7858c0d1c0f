import type { AlertGate } from '../config/operations.js';

// The alert gate: a real Prometheus's firing alerts (GET /api/v1/alerts) hold the next node while any matches.
export interface PrometheusAlert {
  labels: Record<string, string>;
  state: string;
  activeAt?: string;
}

/** The firing alerts that match the gate: every given label matches, and the name is listed (when names are given). */
export function holdingAlerts(gate: Pick<AlertGate, 'names' | 'labels'>, alerts: PrometheusAlert[]): PrometheusAlert[] {
  return alerts.filter(
    (a) =>
      a.state === 'firing' &&
      (gate.names.length === 0 || gate.names.includes(a.labels.alertname ?? '')) &&
      Object.entries(gate.labels).every(([k, v]) => a.labels[k] === v),
  );
}

/** The labels by which alerts name a node (kube-state-metrics, node-exporter, kubelet): `instance` without its port. */
const NODE_LABELS = ['node', 'kubernetes_node', 'nodename', 'hostname', 'instance'];

/** The nodes an alert is about, as its labels name them. */
export function alertNodes(alert: PrometheusAlert): string[] {
  return NODE_LABELS.flatMap((k) => (alert.labels[k] ? [alert.labels[k]!.replace(/:\d+$/, '')] : []));
}

/**
 * Splits matching alerts into those that hold the next node and those about nodes this fleet is maintaining right
 * now: a node under maintenance is NotReady and cordoned on purpose (KubeNodeNotReady, KubeNodeUnreachable fire for
 * it), and that must not hold the rest of its wave.
 */
export function splitByMaintained(alerts: PrometheusAlert[], maintaining: string[]): { holding: PrometheusAlert[]; excused: PrometheusAlert[] } {
  const ours = (a: PrometheusAlert) => alertNodes(a).length > 0 && alertNodes(a).every((n) => maintaining.includes(n));
  return { holding: alerts.filter((a) => !ours(a)), excused: alerts.filter(ours) };
}

export function describeAlerts(alerts: PrometheusAlert[]): string {
  const names = alerts.map((a) => {
    const extra = Object.entries(a.labels).filter(([k]) => k !== 'alertname').map(([k, v]) => `${k}=${v}`).join(',');
    return `${a.labels.alertname ?? '(no name)'}${extra ? `{${extra}}` : ''}${a.activeAt ? ` since ${a.activeAt}` : ''}`;
  });
  return [...new Set(names)].join('; ');
}

/** Prometheus's active alerts; throws, naming the server, when it cannot answer. */
export async function fetchAlerts(prometheus: string, timeoutMs = 10_000): Promise<PrometheusAlert[]> {
  const url = new URL('api/v1/alerts', prometheus.endsWith('/') ? prometheus : `${prometheus}/`);
  let body: { status?: string; data?: { alerts?: PrometheusAlert[] }; error?: string };
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { Accept: 'application/json' } });
    body = (await res.json()) as typeof body;
    if (!res.ok || body.status !== 'success') throw new Error(`answered ${res.status}${body.error ? `: ${body.error}` : ''}`);
  } catch (e) {
    throw new Error(`could not read the alerts of Prometheus at ${url.origin}: ${(e as Error).message}`);
  }
  return body.data?.alerts ?? [];
}
