import { ORIGIN_PATTERN } from '../node/packages/pending.js';
import { usageError } from '../errors.js';
import type { DrainOptions } from '../cluster/drain/filters.js';
import { DEFAULT_RUN_OPTIONS, parseTargets, PROOF_LEVELS, REBOOT_POLICIES, validateNodeName, type ProofLevel, type RebootPolicy, type RunOptions } from '../runbook/options.js';

// What a MaintenanceRun may ask (runbooks/agent/crd.yaml), as typed fields: never a command line. A caller makes it
// from its flags, the agent reads it back (checking every field again: the API's schema may be an older one) and
// builds the run's arguments from it itself.

export type RunCommand = 'upgrade' | 'audit';

export interface UpgradeTimeouts {
  readySeconds?: number;
  smokeSeconds?: number;
  lockSeconds?: number;
  outageToleranceSeconds?: number;
  budgetWaitSeconds?: number;
  rebootSeconds?: number;
}

export interface UpgradeSpec {
  targets?: Array<{ package: string; version: string }>;
  /** apt's pending upgrades (of one origin, or all) instead of targets. */
  pendingUpgrades?: { origin?: string };
  reboot?: RebootPolicy;
  rollback?: boolean;
  dryRun?: boolean;
  proof?: ProofLevel;
  allowControlPlane?: boolean;
  allowNoRollback?: boolean;
  drain?: Partial<DrainOptions>;
  timeouts?: UpgradeTimeouts;
}

export interface AuditSpec {
  clusterWide?: boolean;
  skipWaitForDeleteTimeoutSeconds?: number;
}

export interface RunSpec {
  nodeName: string;
  /** Who asked, as the API server knows them (its admission policy refuses another name). */
  requestedBy: string;
  command: RunCommand;
  output?: 'text' | 'json';
  upgrade?: UpgradeSpec;
  audit?: AuditSpec;
  /** The requester's stop: its Ctrl-C, or its withdrawal of a run no agent started. */
  stop?: { reason: string; at?: string };
}

/** A value with its objects' keys in order: the API server gives a spec back in an order of its own. */
const canonical = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(canonical) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])])) : v;

/** The run-defining part of a spec (what is asked, not who asked or whether it was stopped), to tell two asks apart. */
export const runOf = ({ nodeName, command, output, upgrade, audit }: RunSpec) => JSON.stringify(canonical({ nodeName, command, output: output ?? 'text', upgrade: upgrade ?? null, audit: audit ?? null }));

/** "upgrade containerd=1.6.20~ds1-1+deb12u3, reboot if-required": one line for a person. */
export function describeRun(spec: RunSpec): string {
  if (spec.command === 'audit') return `audit${spec.audit?.clusterWide ? ' --cluster-wide' : ''}`;
  const u = spec.upgrade ?? {};
  const what = u.rollback ? 'rollback' : [...(u.targets ?? []).map((t) => `${t.package}=${t.version}`), ...(u.pendingUpgrades ? [`pending upgrades${u.pendingUpgrades.origin ? ` of ${u.pendingUpgrades.origin}` : ''}`] : [])].join(', ');
  return [`upgrade ${what || '(no package)'}`, ...(u.reboot && u.reboot !== 'never' ? [`reboot ${u.reboot}`] : []), ...(u.dryRun ? ['dry run'] : [])].join(', ');
}

const TIMEOUT_FIELDS: Array<[keyof UpgradeTimeouts, keyof RunOptions]> = [
  ['readySeconds', 'readyTimeoutSeconds'],
  ['smokeSeconds', 'smokeTimeoutSeconds'],
  ['lockSeconds', 'lockTimeoutSeconds'],
  ['outageToleranceSeconds', 'outageToleranceSeconds'],
  ['budgetWaitSeconds', 'budgetWaitSeconds'],
  ['rebootSeconds', 'rebootTimeoutSeconds'],
];

/** Only what differs from the defaults goes into a spec: what is left out is the runbook's own default. */
function changed<T extends object>(values: T, defaults: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([k, v]) => v !== undefined && v !== (defaults as Record<string, unknown>)[k])) as Partial<T>;
}

/** An upgrade's spec from the options a caller's flags made (upgrade-node NODE ... --via agent), or a fleet's node. */
export function upgradeSpecOf(options: RunOptions, pending?: { origin?: string }): UpgradeSpec {
  const targets = Object.entries(options.targets).map(([pkg, version]) => ({ package: pkg, version }));
  const timeouts = Object.fromEntries(TIMEOUT_FIELDS.flatMap(([field, option]) => (options[option] !== DEFAULT_RUN_OPTIONS[option as keyof typeof DEFAULT_RUN_OPTIONS] ? [[field, options[option]]] : [])));
  const drain = changed(options.drain, DEFAULT_RUN_OPTIONS.drain);
  const spec: UpgradeSpec = {
    ...(targets.length > 0 ? { targets } : {}),
    ...(pending ? { pendingUpgrades: pending.origin ? { origin: pending.origin } : {} } : {}),
    ...(options.reboot !== 'never' ? { reboot: options.reboot } : {}),
    ...(options.rollback ? { rollback: true } : {}),
    ...(options.dryRun ? { dryRun: true } : {}),
    ...(options.proof !== DEFAULT_RUN_OPTIONS.proof ? { proof: options.proof } : {}),
    ...(options.allowControlPlane ? { allowControlPlane: true } : {}),
    ...(options.allowNoRollback ? { allowNoRollback: true } : {}),
    ...(Object.keys(drain).length > 0 ? { drain } : {}),
    ...(Object.keys(timeouts).length > 0 ? { timeouts } : {}),
  };
  return spec;
}

type Problems = string[];
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Each key of `value` that `known` does not list: a field this agent does not know is never ignored. */
function unknownKeys(where: string, value: Record<string, unknown>, known: string[], problems: Problems): void {
  for (const k of Object.keys(value)) if (!known.includes(k)) problems.push(`${where}.${k} is not a field this agent knows`);
}

function checkBooleans(where: string, value: Record<string, unknown>, keys: string[], problems: Problems): void {
  for (const k of keys) if (value[k] !== undefined && typeof value[k] !== 'boolean') problems.push(`${where}.${k} must be true or false`);
}

function checkSeconds(where: string, value: Record<string, unknown>, keys: string[], problems: Problems, min = 1): void {
  for (const k of keys) {
    const v = value[k];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= min && (v as number) <= 86_400)) problems.push(`${where}.${k} must be a whole number of seconds from ${min} to 86400 (got ${JSON.stringify(v)})`);
  }
}

function readUpgrade(u: Record<string, unknown>, problems: Problems): void {
  unknownKeys('spec.upgrade', u, ['targets', 'pendingUpgrades', 'reboot', 'rollback', 'dryRun', 'proof', 'allowControlPlane', 'allowNoRollback', 'drain', 'timeouts'], problems);
  if (u.targets !== undefined) {
    if (!Array.isArray(u.targets) || u.targets.length > 16) problems.push('spec.upgrade.targets must be a list of at most 16 {package, version}');
    else for (const t of u.targets) {
      if (!isObject(t) || typeof t.package !== 'string' || typeof t.version !== 'string' || Object.keys(t).length !== 2) problems.push(`spec.upgrade.targets: ${JSON.stringify(t)} is not {package, version}`);
      else try {
        parseTargets(`${t.package}=${t.version}`);
      } catch (e) {
        problems.push(`spec.upgrade.targets: ${(e as Error).message}`);
      }
    }
  }
  if (u.pendingUpgrades !== undefined) {
    const p = u.pendingUpgrades;
    if (!isObject(p) || (p.origin !== undefined && (typeof p.origin !== 'string' || !ORIGIN_PATTERN.test(p.origin)))) problems.push('spec.upgrade.pendingUpgrades must be {} or {origin: an origin as apt prints it}');
    else unknownKeys('spec.upgrade.pendingUpgrades', p, ['origin'], problems);
    if (Array.isArray(u.targets) && u.targets.length > 0) problems.push('spec.upgrade.pendingUpgrades and targets do not go together: the pending upgrades are the targets');
  }
  if (u.reboot !== undefined && !REBOOT_POLICIES.includes(u.reboot as RebootPolicy)) problems.push(`spec.upgrade.reboot must be ${REBOOT_POLICIES.join(', ')}`);
  if (u.proof !== undefined && !PROOF_LEVELS.includes(u.proof as ProofLevel)) problems.push(`spec.upgrade.proof must be ${PROOF_LEVELS.join(' or ')}`);
  checkBooleans('spec.upgrade', u, ['rollback', 'dryRun', 'allowControlPlane', 'allowNoRollback'], problems);
  if (u.drain !== undefined) {
    if (!isObject(u.drain)) problems.push('spec.upgrade.drain must be an object');
    else {
      unknownKeys('spec.upgrade.drain', u.drain, ['ignoreDaemonSets', 'deleteEmptyDirData', 'force', 'gracePeriodSeconds', 'timeoutSeconds', 'skipWaitForDeleteTimeoutSeconds'], problems);
      checkBooleans('spec.upgrade.drain', u.drain, ['ignoreDaemonSets', 'deleteEmptyDirData', 'force'], problems);
      checkSeconds('spec.upgrade.drain', u.drain, ['timeoutSeconds'], problems);
      checkSeconds('spec.upgrade.drain', u.drain, ['skipWaitForDeleteTimeoutSeconds'], problems, 0);
      checkSeconds('spec.upgrade.drain', u.drain, ['gracePeriodSeconds'], problems, -1);
    }
  }
  if (u.timeouts !== undefined) {
    if (!isObject(u.timeouts)) problems.push('spec.upgrade.timeouts must be an object');
    else {
      unknownKeys('spec.upgrade.timeouts', u.timeouts, TIMEOUT_FIELDS.map(([f]) => f), problems);
      checkSeconds('spec.upgrade.timeouts', u.timeouts, TIMEOUT_FIELDS.map(([f]) => f), problems);
    }
  }
  const nothing = !u.rollback && (u.reboot === undefined || u.reboot === 'never') && u.pendingUpgrades === undefined && !(Array.isArray(u.targets) && u.targets.length > 0);
  if (nothing) problems.push('spec.upgrade asks nothing: give targets, pendingUpgrades, a reboot or rollback');
}

/**
 * The agent's read of a spec: every field checked again, as the runbook's own flags would check it, and any field it
 * does not know refused. Throws a usage error listing every problem.
 */
export function readSpec(raw: unknown, node: string): RunSpec {
  const problems: Problems = [];
  if (!isObject(raw)) throw usageError('the MaintenanceRun has no spec');
  unknownKeys('spec', raw, ['nodeName', 'requestedBy', 'command', 'output', 'upgrade', 'audit', 'stop'], problems);
  if (raw.nodeName !== node) problems.push(`spec.nodeName is ${JSON.stringify(raw.nodeName)}, and this agent runs on ${node}`);
  else validateNodeName(node);
  if (typeof raw.requestedBy !== 'string' || raw.requestedBy === '') problems.push('spec.requestedBy is missing');
  if (raw.output !== undefined && raw.output !== 'text' && raw.output !== 'json') problems.push('spec.output must be text or json');
  if (raw.command === 'upgrade') {
    if (!isObject(raw.upgrade)) problems.push('spec.upgrade is missing');
    else readUpgrade(raw.upgrade, problems);
    if (raw.audit !== undefined) problems.push('an upgrade carries no spec.audit');
  } else if (raw.command === 'audit') {
    if (raw.upgrade !== undefined) problems.push('an audit carries no spec.upgrade');
    if (raw.audit !== undefined && !isObject(raw.audit)) problems.push('spec.audit must be an object');
    else if (raw.audit !== undefined) {
      unknownKeys('spec.audit', raw.audit, ['clusterWide', 'skipWaitForDeleteTimeoutSeconds'], problems);
      checkBooleans('spec.audit', raw.audit, ['clusterWide'], problems);
      checkSeconds('spec.audit', raw.audit, ['skipWaitForDeleteTimeoutSeconds'], problems, 0);
    }
  } else problems.push(`spec.command must be upgrade or audit (got ${JSON.stringify(raw.command)})`);
  if (raw.stop !== undefined && !(isObject(raw.stop) && typeof raw.stop.reason === 'string')) problems.push('spec.stop must be {reason}');
  if (problems.length > 0) throw usageError(problems.join('; '));
  return raw as unknown as RunSpec;
}

/** What the agent adds to every run: how its run reaches the node and the cluster, and where it writes. */
export interface RunPlacement {
  kubeconfig: string;
  textfileDir: string;
  leaseNamespace: string;
  smokeNamespace: string;
}

const seconds = (n: number) => `${n}s`;

/** The run's command and its arguments, built from a spec the agent has read and its owner allowed. */
export function runArguments(spec: RunSpec, at: RunPlacement): { command: 'upgrade-node' | 'audit-node'; args: string[] } {
  const common = ['--output', spec.output ?? 'text', '--transport', 'local', '--kubeconfig', at.kubeconfig, '--textfile-dir', at.textfileDir, '--lease-namespace', at.leaseNamespace];
  if (spec.command === 'audit') {
    const a = spec.audit ?? {};
    const skip = a.skipWaitForDeleteTimeoutSeconds ? ['--skip-wait-for-delete-timeout', seconds(a.skipWaitForDeleteTimeoutSeconds)] : [];
    return { command: 'audit-node', args: [spec.nodeName, ...common, ...(a.clusterWide ? ['--cluster-wide'] : []), ...skip] };
  }
  const u = spec.upgrade ?? {};
  const d = u.drain ?? {};
  const t = u.timeouts ?? {};
  const flag = (name: string, on: boolean | undefined) => (on ? [`--${name}`] : []);
  const valued = (name: string, value: number | undefined) => (value === undefined ? [] : [`--${name}=${value}`]);
  const duration = (name: string, value: number | undefined) => (value === undefined ? [] : [`--${name}`, seconds(value)]);
  const targets = (u.targets ?? []).map((x) => `${x.package}=${x.version}`).join(',');
  return {
    command: 'upgrade-node',
    args: [
      spec.nodeName, ...common, '--smoke-namespace', at.smokeNamespace,
      ...(targets ? ['--to', targets] : []),
      ...(u.pendingUpgrades ? ['--pending-upgrades', ...(u.pendingUpgrades.origin ? ['--pending-origin', u.pendingUpgrades.origin] : [])] : []),
      ...(u.reboot === 'always' ? ['--reboot'] : u.reboot === 'if-required' ? ['--reboot-if-required'] : []),
      ...flag('rollback', u.rollback), ...flag('dry-run', u.dryRun),
      ...(u.proof ? ['--proof', u.proof] : []),
      ...flag('allow-control-plane', u.allowControlPlane), ...flag('allow-no-rollback', u.allowNoRollback),
      ...flag('ignore-daemonsets', d.ignoreDaemonSets), ...flag('delete-emptydir-data', d.deleteEmptyDirData), ...flag('force', d.force),
      // -1 as --flag=value: a value that starts with a dash is not taken as one otherwise.
      ...valued('grace-period', d.gracePeriodSeconds),
      ...duration('timeout', d.timeoutSeconds), ...duration('skip-wait-for-delete-timeout', d.skipWaitForDeleteTimeoutSeconds),
      ...duration('ready-timeout', t.readySeconds), ...duration('smoke-timeout', t.smokeSeconds), ...duration('lock-timeout', t.lockSeconds),
      ...duration('outage-tolerance', t.outageToleranceSeconds), ...duration('budget-wait', t.budgetWaitSeconds), ...duration('reboot-timeout', t.rebootSeconds),
    ],
  };
}

/**
 * The longest a run may go without its agent (from the teardown that removes the agent's pod to kubelet bringing it
 * back: the package lock and install, a reboot, kubelet's readiness), with room to spare: how long the run's token
 * must outlive the agent's last look, and how long a caller waits for a silent agent.
 */
export function agentlessSeconds(spec: RunSpec): number {
  const t = spec.upgrade?.timeouts ?? {};
  const reboot = spec.upgrade?.reboot && spec.upgrade.reboot !== 'never' ? (t.rebootSeconds ?? DEFAULT_RUN_OPTIONS.rebootTimeoutSeconds) : 0;
  return (t.lockSeconds ?? DEFAULT_RUN_OPTIONS.lockTimeoutSeconds) + DEFAULT_RUN_OPTIONS.commandTimeoutSeconds + reboot + (t.readySeconds ?? DEFAULT_RUN_OPTIONS.readyTimeoutSeconds) + 600;
}
