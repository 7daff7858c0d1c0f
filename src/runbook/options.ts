import { DEFAULT_DRAIN_OPTIONS, type DrainOptions } from '../cluster/drain/filters.js';
import { DEFAULT_LEASE_TIMING, type LeaseTiming } from '../cluster/lease.js';
import { usageError } from '../errors.js';
import { validateHooks, type Hooks } from './hooks.js';

// The runbook's inputs, validated once, before anything is observed or changed.
export interface RunOptions {
  node: string;
  /** Package name to the exact version to install. */
  targets: Record<string, string>;
  dryRun: boolean;
  drain: DrainOptions;
  leaseNamespace: string;
  /** Where the smoke pod runs (absent: the lease namespace); an agent's runs use a namespace of Pod Security restricted. */
  smokeNamespace?: string;
  /** Refuse to start when the node's /var has less free space than this. */
  minFreeBytes: number;
  /** How long preflight waits for a PodDisruptionBudget that is at zero only for now. */
  budgetWaitSeconds: number;
  /** How long start-kubelet waits for the PodCIDR, Ready and the runtime's network. */
  readyTimeoutSeconds: number;
  /** How long a node-side command may run (package installs take the longest). */
  commandTimeoutSeconds: number;
  /** How long the smoke pod may take to get a sandbox and an IP before uncordon. */
  smokeTimeoutSeconds: number;
  /** How long to wait for the package manager's lock held by another process (unattended-upgrades) before refusing. */
  lockTimeoutSeconds: number;
  /** How long an API outage is waited out (requests retried, changes to the node held) before the run gives up. */
  outageToleranceSeconds: number;
  /** Control-plane nodes are refused unless allowed (a fleet then takes them last, one at a time). */
  allowControlPlane: boolean;
  /** Go on when the versions installed now can no longer be had (archives keep only the newest): no rollback path. */
  allowNoRollback: boolean;
  /** Roll back the node's unfinished run from its journal instead of finishing it. */
  rollback: boolean;
  lease: LeaseTiming;
  /** The operator's commands before the drain, after the upgrade, after the uncordon (hooks.ts). */
  hooks: Hooks;
  /** The hooks are secrets (a fleet's, set with --secret): named by their flag only, never shown. */
  hooksSecret?: boolean;
  /**
   * What the smoke pod must show before uncordon: "ipam" (its IP held by a live sandbox in the node's IPAM; refused in
   * preflight for an IPAM the tool cannot read), or "network-only" (an IP and Ready; the IPAM not checked).
   */
  proof: ProofLevel;
  /** Reboot the node as a step of the run (after the teardown, the clearing and any upgrade): never, always, or when it says so. */
  reboot: RebootPolicy;
  /** Exits 0 on the node when a reboot is required (if-required); default: kured's sentinel file. */
  rebootSentinelCommand?: string;
  /** What reboots the node. */
  rebootCommand: string;
  /** How long the node may take to come back (a new boot, SSH with the same host key). */
  rebootTimeoutSeconds: number;
}

export type RebootPolicy = 'never' | 'always' | 'if-required';
export const REBOOT_POLICIES: readonly RebootPolicy[] = ['never', 'always', 'if-required'];

export type ProofLevel = 'ipam' | 'network-only';
export const PROOF_LEVELS: readonly ProofLevel[] = ['ipam', 'network-only'];

export const DEFAULT_RUN_OPTIONS: Omit<RunOptions, 'node' | 'targets'> = {
  dryRun: false,
  drain: DEFAULT_DRAIN_OPTIONS,
  leaseNamespace: 'kube-system',
  minFreeBytes: 256 * 1024 * 1024,
  budgetWaitSeconds: 120,
  readyTimeoutSeconds: 300,
  commandTimeoutSeconds: 600,
  smokeTimeoutSeconds: 120,
  lockTimeoutSeconds: 120,
  outageToleranceSeconds: 120,
  allowControlPlane: false,
  allowNoRollback: false,
  rollback: false,
  lease: DEFAULT_LEASE_TIMING,
  hooks: {},
  proof: 'ipam',
  reboot: 'never',
  rebootCommand: 'systemctl reboot',
  rebootTimeoutSeconds: 600,
};

const NODE_NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
const PACKAGE_NAME = /^[a-z0-9][a-z0-9+.-]{0,127}$/;
// Debian versions (epoch:upstream-revision): a digit first after any epoch.
const PACKAGE_VERSION = /^([0-9]+:)?[0-9][A-Za-z0-9.+~_^-]{0,127}$/;

export function validateNodeName(node: string): string {
  if (!NODE_NAME.test(node)) throw usageError(`invalid node name ${JSON.stringify(node)}: expected a DNS subdomain (lowercase letters, digits, '-', '.')`);
  return node;
}

// A namespace's name is a DNS label (RFC 1123): no dots, at most 63 characters; a node's may be a longer subdomain.
const NAMESPACE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function validateLeaseNamespace(namespace: string, what = 'lease namespace'): string {
  if (!NAMESPACE.test(namespace)) throw usageError(`invalid ${what} ${JSON.stringify(namespace)}: expected a namespace name (lowercase letters, digits, '-'; at most 63)`);
  return namespace;
}

/** "containerd=1.6.20~ds1-1+deb12u3,docker.io=20.10.24+dfsg1-1+deb12u1+b6" to {containerd: ..., docker.io: ...}. */
export function parseTargets(spec: string): Record<string, string> {
  if (!spec) throw usageError('--to is required: PACKAGE=VERSION[,PACKAGE=VERSION]');
  const targets: Record<string, string> = {};
  for (const part of spec.split(',')) {
    const eq = part.indexOf('=');
    const name = eq > 0 ? part.slice(0, eq).trim() : '';
    const version = eq > 0 ? part.slice(eq + 1).trim() : '';
    if (!PACKAGE_NAME.test(name)) throw usageError(`invalid package name ${JSON.stringify(name || part)} in --to (expected PACKAGE=VERSION)`);
    if (!PACKAGE_VERSION.test(version)) throw usageError(`malformed version ${JSON.stringify(version)} for ${name}: expected a Debian version such as 1.6.20~ds1-1+deb12u3`);
    if (targets[name]) throw usageError(`${name} appears twice in --to`);
    targets[name] = version;
  }
  return targets;
}

/** The smoke pod's namespace: its own when given, else the lease's. */
export const smokeNamespaceOf = (options: Pick<RunOptions, 'leaseNamespace' | 'smokeNamespace'>) => options.smokeNamespace ?? options.leaseNamespace;

export function validateRunOptions(options: RunOptions): RunOptions {
  validateNodeName(options.node);
  if (Object.keys(options.targets).length === 0 && !options.rollback && options.reboot === 'never') {
    throw usageError('nothing to do: give --to PACKAGE=VERSION, --pending-upgrades, --reboot or --reboot-if-required');
  }
  if (!REBOOT_POLICIES.includes(options.reboot)) throw usageError(`reboot must be one of ${REBOOT_POLICIES.join(', ')} (got ${JSON.stringify(options.reboot)})`);
  if (!options.rebootCommand.trim()) throw usageError('--reboot-command is empty');
  if (options.rebootSentinelCommand !== undefined && !options.rebootSentinelCommand.trim()) throw usageError('--reboot-sentinel-command is empty');
  for (const [name, version] of Object.entries(options.targets)) parseTargets(`${name}=${version}`);
  validateLeaseNamespace(options.leaseNamespace);
  if (options.smokeNamespace !== undefined) validateLeaseNamespace(options.smokeNamespace, '--smoke-namespace');
  const positive: Array<[string, number]> = [
    ['--timeout', options.drain.timeoutSeconds],
    ['lease duration', options.lease.durationSeconds],
    ['lease renew deadline', options.lease.renewDeadlineSeconds],
    ['lease retry period', options.lease.retryPeriodSeconds],
    ['--ready-timeout', options.readyTimeoutSeconds],
    ['--smoke-timeout', options.smokeTimeoutSeconds],
    ['--lock-timeout', options.lockTimeoutSeconds],
    ['--outage-tolerance', options.outageToleranceSeconds],
    ['budget wait', options.budgetWaitSeconds],
    ['command timeout', options.commandTimeoutSeconds],
    ['--reboot-timeout', options.rebootTimeoutSeconds],
  ];
  for (const [what, value] of positive) {
    if (!Number.isFinite(value) || value <= 0) throw usageError(`${what} must be a positive number of seconds (got ${value})`);
  }
  const { durationSeconds, renewDeadlineSeconds, retryPeriodSeconds } = options.lease;
  if (!(retryPeriodSeconds < renewDeadlineSeconds && renewDeadlineSeconds < durationSeconds)) {
    throw usageError(`the Lease needs retry period < renew deadline < duration (got ${retryPeriodSeconds}s, ${renewDeadlineSeconds}s, ${durationSeconds}s)`);
  }
  if (options.rollback && options.dryRun) throw usageError('--rollback and --dry-run do not go together');
  validateHooks(options.hooks);
  if (!Number.isInteger(options.drain.gracePeriodSeconds) || options.drain.gracePeriodSeconds < -1) {
    throw usageError(`--grace-period must be -1 (the pod's own) or a whole number of seconds (got ${options.drain.gracePeriodSeconds})`);
  }
  return options;
}
