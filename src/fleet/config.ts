import { DEFAULT_DRAIN_OPTIONS, type DrainOptions } from '../cluster/drain/filters.js';
import { parseTargets, validateNodeName } from '../runbook/options.js';
import type { FleetOrder } from './order.js';
import { UNDRAINABLE_BEHAVIORS, type UndrainableBehavior } from './undrainable.js';
import { checkSchedule, checkTimeZone, parseDuration, type MaintenanceWindow } from './window.js';

// The fleet's stack config (namespace node-maint), validated once; every error names the key it is about.
export const CONFIG_NAMESPACE = 'node-maint';

export interface FleetConfig {
  nodes?: string[];
  nodeSelector?: string;
  targets: Record<string, string>;
  maxUnavailable: number;
  kubeconfig?: string;
  context?: string;
  ssh: { user: string; port: number; knownHosts?: string; bastion?: string; hosts: Record<string, string> };
  /** Private key content; a Pulumi secret. */
  sshKey?: string;
  dockerExec?: { dockerHost?: string; containers: Record<string, string> };
  drain: DrainOptions;
  leaseNamespace: string;
  /** Control-plane nodes are maintained only when allowed, and then last, one at a time. */
  allowControlPlane: boolean;
  /** When set, a node starts only while the window is open. */
  maintenanceWindow?: MaintenanceWindow;
  order: FleetOrder;
  /** A node the drain cannot empty stops the fleet (stop), or is rolled back, marked and passed by (skip). */
  undrainable: UndrainableBehavior;
}

const KEYS = ['nodes', 'nodeSelector', 'targets', 'maxUnavailable', 'kubeconfig', 'context', 'ssh', 'sshKey', 'dockerExec', 'drain', 'leaseNamespace', 'allowControlPlane', 'maintenanceWindow', 'order', 'undrainable'] as const;

export class ConfigError extends Error {
  constructor(key: string, message: string) {
    super(`config ${CONFIG_NAMESPACE}:${key}: ${message}`);
    this.name = 'ConfigError';
  }
}

function closest(word: string, candidates: readonly string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++) d[0]![j] = j;
    for (let i = 1; i <= a.length; i++)
      for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
    return d[a.length]![b.length]!;
  };
  const best = [...candidates].sort((x, y) => distance(word, x) - distance(word, y))[0];
  return best && distance(word, best) <= 3 ? best : undefined;
}

function parse(key: string, raw: string | undefined): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function stringMap(key: string, value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value) || Object.values(value).some((v) => typeof v !== 'string')) throw new ConfigError(key, 'must be a map of names to strings');
  return value as Record<string, string>;
}

function only(key: string, value: Record<string, unknown>, allowed: string[]): void {
  for (const k of Object.keys(value)) {
    if (!allowed.includes(k)) {
      const hint = closest(k, allowed);
      throw new ConfigError(`${key}.${k}`, `unknown setting${hint ? ` (did you mean ${key}.${hint}?)` : ''}; known: ${allowed.join(', ')}`);
    }
  }
}

function maintenanceWindow(value: unknown): MaintenanceWindow | undefined {
  if (value === undefined) return undefined;
  const key = 'maintenanceWindow';
  if (!isRecord(value)) throw new ConfigError(key, 'must be an object: {"schedule": "0 22 * * 6", "duration": "4h", "timeZone": "Europe/Berlin"}');
  only(key, value, ['schedule', 'duration', 'timeZone']);
  const { schedule, duration, timeZone = 'UTC' } = value;
  if (typeof timeZone !== 'string') throw new ConfigError(`${key}.timeZone`, 'must be an IANA time zone name such as Europe/Berlin');
  try {
    checkTimeZone(timeZone);
  } catch {
    throw new ConfigError(`${key}.timeZone`, `unknown time zone ${JSON.stringify(timeZone)} (an IANA name such as Europe/Berlin, or UTC)`);
  }
  if (typeof schedule !== 'string') throw new ConfigError(`${key}.schedule`, 'required: a 5-field cron expression for when each window opens, e.g. "0 22 * * 6"');
  try {
    checkSchedule(schedule, timeZone);
  } catch (e) {
    throw new ConfigError(`${key}.schedule`, `${JSON.stringify(schedule)}: ${(e as Error).message}`);
  }
  const minutes = typeof duration === 'string' ? parseDuration(duration) : undefined;
  if (minutes === undefined) throw new ConfigError(`${key}.duration`, `must be a positive duration in hours and/or minutes such as "4h", "90m" or "1h30m" (got ${JSON.stringify(duration)})`);
  return { schedule, durationMinutes: minutes, timeZone };
}

const ORDERS = ['fewest-pods', 'as-listed'] as const;

function fleetOrder(value: unknown): FleetOrder {
  if (value === undefined) return 'fewest-pods';
  if (typeof value === 'string') {
    if ((ORDERS as readonly string[]).includes(value)) return value as FleetOrder;
    const hint = closest(value, ORDERS);
    throw new ConfigError('order', `unknown order ${JSON.stringify(value)}${hint ? ` (did you mean ${hint}?)` : ''}; known: ${ORDERS.join(', ')}, or a list of node names to go first`);
  }
  if (!Array.isArray(value) || value.length === 0 || value.some((n) => typeof n !== 'string')) throw new ConfigError('order', `must be ${ORDERS.join(' or ')}, or a non-empty list of node names to go first`);
  const names = value as string[];
  for (const n of names) {
    try {
      validateNodeName(n);
    } catch (e) {
      throw new ConfigError('order', (e as Error).message);
    }
  }
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length > 0) throw new ConfigError('order', `lists ${[...new Set(twice)].join(', ')} more than once`);
  return { first: names };
}

function undrainable(value: unknown): UndrainableBehavior {
  if (value === undefined) return 'stop';
  if (typeof value === 'string' && (UNDRAINABLE_BEHAVIORS as readonly string[]).includes(value)) return value as UndrainableBehavior;
  const hint = typeof value === 'string' ? closest(value, UNDRAINABLE_BEHAVIORS) : undefined;
  throw new ConfigError('undrainable', `unknown behaviour ${JSON.stringify(value)}${hint ? ` (did you mean ${hint}?)` : ''}; known: stop (roll the node back and stop the fleet, the default), skip (roll it back, mark it, go on with the others)`);
}

export interface ConfigSecrecy {
  /** The full keys (node-maint:sshKey) the stack holds as secrets, as the engine lists them to the program. */
  secretKeys: readonly string[];
}

/** Validates raw config, as `pulumi config` stores it: key -> string (objects and lists as JSON). */
export function parseFleetConfig(raw: Record<string, string>, { secretKeys }: ConfigSecrecy): FleetConfig {
  for (const full of Object.keys(raw)) {
    const [ns, key = ''] = full.split(':');
    if (ns !== CONFIG_NAMESPACE) continue;
    if (!(KEYS as readonly string[]).includes(key)) {
      const hint = closest(key, KEYS);
      throw new ConfigError(key, `unknown key${hint ? ` (did you mean ${CONFIG_NAMESPACE}:${hint}?)` : ''}`);
    }
  }
  // Checked before any value is read; the value itself is never named in a message.
  const sshKeyFull = `${CONFIG_NAMESPACE}:sshKey`;
  if (raw[sshKeyFull] !== undefined && !secretKeys.includes(sshKeyFull)) {
    throw new ConfigError(
      'sshKey',
      `is in the stack file in plain text, not a secret; run \`pulumi config rm ${sshKeyFull}\`, then \`cat KEY | pulumi config set --secret ${sshKeyFull}\` (and replace the key if the stack file was shared)`,
    );
  }
  const get = (key: (typeof KEYS)[number]) => parse(key, raw[`${CONFIG_NAMESPACE}:${key}`]);

  const nodes = get('nodes');
  const nodeSelector = get('nodeSelector');
  if (nodes === undefined && nodeSelector === undefined) throw new ConfigError('nodes', 'set either nodes (a list of node names) or nodeSelector (a label selector)');
  if (nodes !== undefined && nodeSelector !== undefined) throw new ConfigError('nodeSelector', 'set nodes or nodeSelector, not both');
  if (nodes !== undefined && (!Array.isArray(nodes) || nodes.length === 0 || nodes.some((n) => typeof n !== 'string'))) throw new ConfigError('nodes', 'must be a non-empty list of node names');
  for (const n of (nodes as string[] | undefined) ?? []) {
    try {
      validateNodeName(n);
    } catch (e) {
      throw new ConfigError('nodes', (e as Error).message);
    }
  }
  if (nodeSelector !== undefined && (typeof nodeSelector !== 'string' || !/^[A-Za-z0-9._/=!,-]+$/.test(nodeSelector))) throw new ConfigError('nodeSelector', `invalid label selector ${JSON.stringify(nodeSelector)}`);

  const targetsRaw = get('targets');
  if (targetsRaw === undefined) throw new ConfigError('targets', 'required: a map of package to version, e.g. {"containerd": "1.6.20~ds1-1+deb12u3"}');
  const targetMap = stringMap('targets', targetsRaw);
  let targets: Record<string, string>;
  try {
    targets = parseTargets(Object.entries(targetMap).map(([p, v]) => `${p}=${v}`).join(','));
  } catch (e) {
    throw new ConfigError('targets', (e as Error).message);
  }

  const maxRaw = get('maxUnavailable') ?? 1;
  if (typeof maxRaw !== 'number' || !Number.isInteger(maxRaw) || maxRaw < 1) throw new ConfigError('maxUnavailable', `must be a whole number >= 1 (got ${JSON.stringify(maxRaw)})`);

  const sshRaw = get('ssh') ?? {};
  if (!isRecord(sshRaw)) throw new ConfigError('ssh', 'must be an object');
  only('ssh', sshRaw, ['user', 'port', 'knownHosts', 'bastion', 'hosts']);
  const port = sshRaw.port ?? 22;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) throw new ConfigError('ssh.port', `must be 1-65535 (got ${JSON.stringify(port)})`);
  const user = sshRaw.user ?? 'root';
  if (typeof user !== 'string' || !/^[a-z_][a-z0-9_-]{0,31}$/.test(user)) throw new ConfigError('ssh.user', `invalid user ${JSON.stringify(user)}`);
  for (const k of ['knownHosts', 'bastion'] as const) {
    if (sshRaw[k] !== undefined && typeof sshRaw[k] !== 'string') throw new ConfigError(`ssh.${k}`, 'must be a string');
  }

  const dockerRaw = get('dockerExec');
  if (dockerRaw !== undefined && !isRecord(dockerRaw)) throw new ConfigError('dockerExec', 'must be an object');
  if (dockerRaw) only('dockerExec', dockerRaw, ['dockerHost', 'containers']);

  const drainRaw = get('drain') ?? {};
  if (!isRecord(drainRaw)) throw new ConfigError('drain', 'must be an object');
  only('drain', drainRaw, ['ignoreDaemonSets', 'deleteEmptyDirData', 'force', 'gracePeriodSeconds', 'timeoutSeconds']);
  const drain: DrainOptions = { ...DEFAULT_DRAIN_OPTIONS, ...(drainRaw as Partial<DrainOptions>) };
  for (const k of ['ignoreDaemonSets', 'deleteEmptyDirData', 'force'] as const) {
    if (typeof drain[k] !== 'boolean') throw new ConfigError(`drain.${k}`, 'must be true or false');
  }
  if (!Number.isInteger(drain.gracePeriodSeconds) || drain.gracePeriodSeconds < -1) throw new ConfigError('drain.gracePeriodSeconds', 'must be -1 or a whole number of seconds');
  if (!Number.isInteger(drain.timeoutSeconds) || drain.timeoutSeconds <= 0) throw new ConfigError('drain.timeoutSeconds', 'must be a positive whole number of seconds');

  const sshKey = get('sshKey');
  if (sshKey !== undefined && (typeof sshKey !== 'string' || !sshKey.includes('PRIVATE KEY'))) throw new ConfigError('sshKey', 'must be a private key (PEM or OpenSSH), set with `pulumi config set --secret`');
  const allowControlPlane = get('allowControlPlane') ?? false;
  if (typeof allowControlPlane !== 'boolean') throw new ConfigError('allowControlPlane', 'must be true or false');
  for (const k of ['kubeconfig', 'context', 'leaseNamespace'] as const) {
    if (get(k) !== undefined && typeof get(k) !== 'string') throw new ConfigError(k, 'must be a string');
  }
  return {
    nodes: nodes as string[] | undefined,
    nodeSelector: nodeSelector as string | undefined,
    targets,
    maxUnavailable: maxRaw,
    kubeconfig: get('kubeconfig') as string | undefined,
    context: get('context') as string | undefined,
    ssh: { user, port, knownHosts: sshRaw.knownHosts as string | undefined, bastion: sshRaw.bastion as string | undefined, hosts: stringMap('ssh.hosts', sshRaw.hosts) },
    sshKey: sshKey as string | undefined,
    dockerExec: dockerRaw ? { dockerHost: dockerRaw.dockerHost as string | undefined, containers: stringMap('dockerExec.containers', dockerRaw.containers) } : undefined,
    drain,
    leaseNamespace: (get('leaseNamespace') as string | undefined) ?? 'kube-system',
    allowControlPlane: allowControlPlane as boolean,
    maintenanceWindow: maintenanceWindow(get('maintenanceWindow')),
    order: fleetOrder(get('order')),
    undrainable: undrainable(get('undrainable')),
  };
}
