import { bed, waitFor } from './bed.js';

// The bed's real Prometheus, asked over its HTTP API as an operator's dashboard or alertmanager would.
async function api<T>(path: string): Promise<T> {
  const res = await fetch(new URL(path, bed().prometheus));
  const body = (await res.json()) as { status: string; data: T };
  if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${JSON.stringify(body)}`);
  return body.data;
}

/** The value of each series an instant query returns, keyed by its labels in text. */
export async function query(expr: string): Promise<Record<string, number>> {
  const data = await api<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(`/api/v1/query?query=${encodeURIComponent(expr)}`);
  return Object.fromEntries(data.result.map((r) => [JSON.stringify(r.metric), Number(r.value[1])]));
}

export async function firingAlerts(): Promise<string[]> {
  const data = await api<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>('/api/v1/alerts');
  return data.alerts.filter((a) => a.state === 'firing').map((a) => a.labels.alertname!);
}

/** Waits until the query's only series has this value (scraped, so a few seconds after the file changed). */
export async function waitForValue(expr: string, value: number): Promise<void> {
  await waitFor(async () => {
    const values = Object.values(await query(expr));
    return values.length === 1 && values[0] === value;
  }, 60_000, `Prometheus: ${expr} == ${value}`);
}

export async function waitForAlert(name: string, firing: boolean): Promise<void> {
  await waitFor(async () => (await firingAlerts()).includes(name) === firing, 60_000, `alert ${name} ${firing ? 'firing' : 'resolved'}`);
}
