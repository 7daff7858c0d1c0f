import { HOOK_FLAGS, isHookCommand, type Hooks } from '../../runbook/hooks.js';
import { isTextfileDir } from '../../metrics/textfile-dir.js';
import { ConfigError, durationSeconds, isRecord, objectOf, stringMap } from './values.js';

// The keys that watch over the fleet as it goes: gates between waves, hooks on each node, metrics and notifications.

/** Alerts of a real Prometheus that hold the next node while they fire. */
export interface AlertGate {
  /** The Prometheus base URL (its /api/v1/alerts is asked). */
  prometheus: string;
  /** Alert names that hold; empty: any name whose labels match. */
  names: string[];
  /** Labels an alert must carry, all of them, to hold; empty: any labels. */
  labels: Record<string, string>;
  /** How long firing alerts may hold a node before the fleet stops. */
  holdTimeoutSeconds: number;
}

export interface Gates {
  /** How long the workloads that had pods on a node may take to be back at their ready replicas. */
  workloadsTimeoutSeconds: number;
  /** Time to wait after a wave is back before the next wave starts. */
  soakSeconds: number;
  alerts?: AlertGate;
}

export const DEFAULT_GATES: Gates = { workloadsTimeoutSeconds: 900, soakSeconds: 0 };

const EXAMPLE_GATES = '{"soak": "5m", "workloadsTimeout": "15m", "alerts": {"prometheus": "http://prometheus.monitoring:9090", "names": ["KubePodCrashLooping"], "holdTimeout": "30m"}}';

/** An http(s) URL without credentials; `secret` keeps the value out of the message (a webhook's path carries a token). */
export function httpUrl(key: string, value: unknown, { secret = false } = {}): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.username || url.password) {
    const got = typeof value !== 'string' ? typeof value : secret ? 'a value not shown' : JSON.stringify(value.replace(/\/\/[^@/]*@/, '//***@'));
    throw new ConfigError(key, `must be an http:// or https:// URL without credentials in it (got ${got})`);
  }
  return url.href;
}

function alertGate(value: unknown): AlertGate | undefined {
  const key = 'gates.alerts';
  const raw = objectOf(key, value, ['prometheus', 'names', 'labels', 'holdTimeout'], '{"prometheus": "http://prometheus:9090", "names": ["NodeDown"], "holdTimeout": "30m"}');
  if (!raw) return undefined;
  if (raw.names !== undefined && (!Array.isArray(raw.names) || raw.names.some((n) => typeof n !== 'string' || !/^[A-Za-z_:][A-Za-z0-9_:]*$/.test(n)))) {
    throw new ConfigError(`${key}.names`, 'must be a list of alert names (letters, digits, _ and :)');
  }
  const names = (raw.names as string[] | undefined) ?? [];
  const labels = stringMap(`${key}.labels`, raw.labels);
  // Many setups keep an always-firing alert (Watchdog): "any alert" would hold the fleet forever.
  if (names.length === 0 && Object.keys(labels).length === 0) throw new ConfigError(key, 'needs names or labels (or both) to say which firing alerts hold the fleet');
  return { prometheus: httpUrl(`${key}.prometheus`, raw.prometheus), names, labels, holdTimeoutSeconds: durationSeconds(`${key}.holdTimeout`, raw.holdTimeout, 1800) };
}

export function gates(value: unknown): Gates {
  const raw = objectOf('gates', value, ['soak', 'workloadsTimeout', 'alerts'], EXAMPLE_GATES);
  if (!raw) return DEFAULT_GATES;
  return {
    workloadsTimeoutSeconds: durationSeconds('gates.workloadsTimeout', raw.workloadsTimeout, DEFAULT_GATES.workloadsTimeoutSeconds),
    soakSeconds: durationSeconds('gates.soak', raw.soak, DEFAULT_GATES.soakSeconds, { allowZero: true }),
    ...(raw.alerts !== undefined ? { alerts: alertGate(raw.alerts) } : {}),
  };
}

export function hooks(value: unknown): Hooks {
  const raw = objectOf('hooks', value, Object.keys(HOOK_FLAGS), '{"beforeDrain": "local:./notify-team.sh", "afterUpgrade": "/usr/local/sbin/check-runtime"}');
  for (const [point, command] of Object.entries(raw ?? {})) {
    if (!isHookCommand(command)) {
      throw new ConfigError(`hooks.${point}`, 'must be a command (run on the node, or on this machine when it starts with "local:")');
    }
  }
  return (raw ?? {}) as Hooks;
}

export interface MetricsConfig {
  /** node-exporter's textfile collector directory on each node: the run and the audit write their .prom files there. */
  textfileDir: string;
}

export function metrics(value: unknown): MetricsConfig | undefined {
  const raw = objectOf('metrics', value, ['textfileDir'], '{"textfileDir": "/var/lib/prometheus/node-exporter"}');
  if (!raw) return undefined;
  if (!isTextfileDir(raw.textfileDir)) {
    throw new ConfigError('metrics.textfileDir', `must be an absolute path of letters, digits, '.', '_', '-' and '/' (got ${JSON.stringify(raw.textfileDir)})`);
  }
  return { textfileDir: raw.textfileDir };
}

export function webhook(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (isRecord(value)) throw new ConfigError('webhook', 'must be a URL string (set it with `pulumi config set --secret node-maint:webhook URL` when it carries a token)');
  return httpUrl('webhook', value, { secret: true });
}
