import { ORIGIN_PATTERN } from '../../node/packages/pending.js';
import { DEFAULT_DRAIN_OPTIONS, type DrainOptions } from '../../cluster/drain/filters.js';
import type { Hooks } from '../../runbook/hooks.js';
import { DEFAULT_RUN_OPTIONS, parseTargets, REBOOT_POLICIES, validateLeaseNamespace, validateNodeName, type RebootPolicy } from '../../runbook/options.js';
import type { FleetOrder } from '../order.js';
import type { UndrainableBehavior } from '../undrainable.js';
import type { MaintenanceWindow } from '../window.js';
import { BLOCKING_POD_SCOPES, type BlockingPods } from '../blocking-pods.js';
import { gates, hooks, metrics, webhook, type Gates, type MetricsConfig } from './operations.js';
import { fleetOrder, maintenanceWindow, undrainable } from './schedule.js';
import { CONFIG_NAMESPACE, closest, ConfigError, isRecord, only, parseValue, stringMap } from './values.js';
import { agentConfig, type AgentConfig } from './agent.js';

export { CONFIG_NAMESPACE, ConfigError } from './values.js';
export type { AlertGate, Gates, MetricsConfig } from './operations.js';

// The fleet's stack config (namespace node-maint), validated once; every error names the key it is about.

export interface FleetConfig {
  nodes?: string[];
  nodeSelector?: string;
  /** Package to version; empty when the fleet only reboots or takes each node's pending upgrades. */
  targets: Record<string, string>;
  /** Instead of targets: what apt has pending on each node (all, or one origin's), read when the fleet is planned. */
  pendingUpgrades?: { origin?: string };
  /** While a pod matching the selector runs on the node (or anywhere), the node is held; past the wait, undrainable. */
  blockingPods?: BlockingPods;
  /** The nodes still to do carry a PreferNoSchedule taint while the fleet runs (kured's idea); default on. */
  preferNoScheduleWhileWaiting: boolean;
  /** Reboot each node as a step of its run: never, always, or when it says so (read in preview and up). */
  reboot: { policy: RebootPolicy; sentinelCommand?: string; command?: string; timeoutSeconds: number };
  maxUnavailable: number;
  kubeconfig?: string;
  context?: string;
  /** How each node is reached: ssh (with dockerExec for kind's nodes), or its node-maint agent (runbooks/agent.yaml). */
  access: 'ssh' | 'agent';
  /** With access: agent, the stack makes the agent itself (runbooks/agent.yaml) before any node is observed. */
  agent?: AgentConfig;
  ssh: { user: string; port: number; knownHosts?: string; bastion?: string; hosts: Record<string, string> };
  /** Private key content; a Pulumi secret. */
  sshKey?: string;
  dockerExec?: { dockerHost?: string; containers: Record<string, string> };
  drain: DrainOptions;
  leaseNamespace: string;
  /** Control-plane nodes are maintained only when allowed, and then last, one at a time. */
  allowControlPlane: boolean;
  /** Nodes whose installed versions can no longer be had are upgraded anyway, without a rollback path. */
  allowNoRollback: boolean;
  /** The stack creates runbooks/rbac.yaml's objects (through @pulumi/kubernetes) before any node starts. */
  createRbac: boolean;
  /** When set, a node starts only while the window is open. */
  maintenanceWindow?: MaintenanceWindow;
  order: FleetOrder;
  /** A node the drain cannot empty stops the fleet (stop), or is rolled back, marked and passed by (skip). */
  undrainable: UndrainableBehavior;
  /** What must hold before the next node starts: its wave's nodes and workloads back, a soak, no firing alert. */
  gates: Gates;
  /** The operator's commands before the drain, after the upgrade, after the uncordon, on each node. */
  hooks: Hooks;
  /** The hooks were set with --secret: never shown. */
  hooksSecret: boolean;
  metrics?: MetricsConfig;
  /** Where a JSON message (Slack-compatible `text`) goes at the fleet's start, each node's end and the fleet's end. */
  webhook?: string;
}

const KEYS = ['nodes', 'nodeSelector', 'targets', 'reboot', 'rebootSentinelCommand', 'rebootCommand', 'rebootTimeoutSeconds', 'preferNoScheduleWhileWaiting', 'blockingPodSelector', 'blockingPodScope', 'blockingPodTimeoutSeconds', 'maxUnavailable', 'pendingUpgrades', 'kubeconfig', 'context', 'access', 'ssh', 'sshKey', 'dockerExec', 'drain', 'leaseNamespace', 'allowControlPlane', 'allowNoRollback', 'createRbac', 'maintenanceWindow', 'order', 'undrainable', 'gates', 'hooks', 'metrics', 'webhook', 'agent'] as const;

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
  // Checked before any value is read; the value itself is never named in a message. The SSH key, and the webhook's
  // URL (Slack's carries its token in the path), are secrets or nothing.
  const plain = (key: 'sshKey' | 'webhook', setIt: string, replaceIt: string) => {
    const full = `${CONFIG_NAMESPACE}:${key}`;
    if (raw[full] !== undefined && !secretKeys.includes(full)) {
      throw new ConfigError(key, `is in the stack file in plain text, not a secret; run \`pulumi config rm ${full}\`, then \`${setIt}\` (and ${replaceIt} if the stack file was shared)`);
    }
  };
  plain('sshKey', `cat KEY | pulumi config set --secret ${CONFIG_NAMESPACE}:sshKey`, 'replace the key');
  plain('webhook', `pulumi config set --secret ${CONFIG_NAMESPACE}:webhook URL`, 'revoke the URL');
  const get = (key: (typeof KEYS)[number]) => parseValue(raw[`${CONFIG_NAMESPACE}:${key}`]);

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

  const reboot = rebootConfig(get('reboot'), get('rebootSentinelCommand'), get('rebootTimeoutSeconds'), get('rebootCommand'));
  const targetsRaw = get('targets');
  const pendingUpgrades = pendingConfig(get('pendingUpgrades'), targetsRaw);
  if (targetsRaw === undefined && reboot.policy === 'never' && !pendingUpgrades) throw new ConfigError('targets', 'required unless the fleet reboots (reboot: always or if-required) or takes pendingUpgrades: a map of package to version, e.g. {"containerd": "1.6.20~ds1-1+deb12u3"}');
  const targetMap = targetsRaw === undefined ? {} : stringMap('targets', targetsRaw);
  let targets: Record<string, string> = {};
  try {
    if (Object.keys(targetMap).length > 0 || (reboot.policy === 'never' && !pendingUpgrades)) targets = parseTargets(Object.entries(targetMap).map(([p, v]) => `${p}=${v}`).join(','));
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
  // Without it every node would go over SSH, which a docker exec stack has no key for.
  if (dockerRaw && dockerRaw.containers === undefined) throw new ConfigError('dockerExec.containers', 'is missing: a map of node name to container name (nodes not in it are reached over SSH)');

  const drainRaw = get('drain') ?? {};
  if (!isRecord(drainRaw)) throw new ConfigError('drain', 'must be an object');
  only('drain', drainRaw, ['ignoreDaemonSets', 'deleteEmptyDirData', 'force', 'gracePeriodSeconds', 'timeoutSeconds', 'skipWaitForDeleteTimeoutSeconds']);
  const drain: DrainOptions = { ...DEFAULT_DRAIN_OPTIONS, ...(drainRaw as Partial<DrainOptions>) };
  for (const k of ['ignoreDaemonSets', 'deleteEmptyDirData', 'force'] as const) {
    if (typeof drain[k] !== 'boolean') throw new ConfigError(`drain.${k}`, 'must be true or false');
  }
  if (!Number.isInteger(drain.gracePeriodSeconds) || drain.gracePeriodSeconds < -1) throw new ConfigError('drain.gracePeriodSeconds', 'must be -1 or a whole number of seconds');
  if (!Number.isInteger(drain.timeoutSeconds) || drain.timeoutSeconds <= 0) throw new ConfigError('drain.timeoutSeconds', 'must be a positive whole number of seconds');
  if (!Number.isInteger(drain.skipWaitForDeleteTimeoutSeconds) || drain.skipWaitForDeleteTimeoutSeconds < 0) throw new ConfigError('drain.skipWaitForDeleteTimeoutSeconds', 'must be 0 (wait for every pod) or a whole number of seconds');

  const sshKey = get('sshKey');
  if (sshKey !== undefined && (typeof sshKey !== 'string' || !sshKey.includes('PRIVATE KEY'))) throw new ConfigError('sshKey', 'must be a private key (PEM or OpenSSH), set with `pulumi config set --secret`');
  const flags = { allowControlPlane: false, allowNoRollback: false, createRbac: false, preferNoScheduleWhileWaiting: true };
  for (const k of Object.keys(flags) as Array<keyof typeof flags>) {
    const value = get(k) ?? flags[k];
    if (typeof value !== 'boolean') throw new ConfigError(k, 'must be true or false');
    flags[k] = value;
  }
  for (const k of ['kubeconfig', 'context', 'leaseNamespace'] as const) {
    if (get(k) !== undefined && typeof get(k) !== 'string') throw new ConfigError(k, 'must be a string');
  }
  // A namespace name, never text: it goes into the RBAC manifest the stack applies.
  const leaseNamespace = (get('leaseNamespace') as string | undefined) ?? 'kube-system';
  try {
    validateLeaseNamespace(leaseNamespace);
  } catch (e) {
    throw new ConfigError('leaseNamespace', (e as Error).message);
  }
  const access = accessConfig(get('access'), { hooks: get('hooks'), rebootSentinelCommand: get('rebootSentinelCommand'), rebootCommand: get('rebootCommand'), metrics: get('metrics'), dockerExec: get('dockerExec') });
  // The plan reads each node's pending upgrades over its session; an agent's facts do not carry them.
  if (access === 'agent' && pendingUpgrades) throw new ConfigError('pendingUpgrades', 'is read over SSH as the fleet is planned, and not through the agents: give targets, or run `upgrade-node NODE --via agent --pending-upgrades` per node');
  return {
    access,
    agent: agentConfig(get('agent'), access),
    nodes: nodes as string[] | undefined,
    nodeSelector: nodeSelector as string | undefined,
    targets,
    ...(pendingUpgrades ? { pendingUpgrades } : {}),
    reboot,
    ...blockingPodsConfig(get('blockingPodSelector'), get('blockingPodScope'), get('blockingPodTimeoutSeconds')),
    maxUnavailable: maxRaw,
    kubeconfig: get('kubeconfig') as string | undefined,
    context: get('context') as string | undefined,
    ssh: { user, port, knownHosts: sshRaw.knownHosts as string | undefined, bastion: sshRaw.bastion as string | undefined, hosts: stringMap('ssh.hosts', sshRaw.hosts) },
    sshKey: sshKey as string | undefined,
    dockerExec: dockerRaw ? { dockerHost: dockerRaw.dockerHost as string | undefined, containers: stringMap('dockerExec.containers', dockerRaw.containers) } : undefined,
    drain,
    leaseNamespace,
    ...flags,
    maintenanceWindow: maintenanceWindow(get('maintenanceWindow')),
    order: fleetOrder(get('order')),
    undrainable: undrainable(get('undrainable')),
    gates: gates(get('gates')),
    hooks: hooks(get('hooks')),
    // Set with --secret, the hooks (commands that may carry a token) stay secret: in the state, the plan and the log.
    hooksSecret: secretKeys.includes(`${CONFIG_NAMESPACE}:hooks`),
    metrics: metrics(get('metrics')),
    webhook: webhook(get('webhook')),
  };
}

/**
 * access: ssh (the default) or agent. Through the agent a run carries no command and no folder it writes (the agent
 * refuses them in any request), so the keys that set them are refused with it, by name.
 */
function accessConfig(value: unknown, others: Record<string, unknown>): FleetConfig['access'] {
  const access = value ?? 'ssh';
  if (access !== 'ssh' && access !== 'agent') throw new ConfigError('access', `must be ssh or agent (got ${JSON.stringify(access)})`);
  if (access === 'agent') {
    for (const [key, why] of Object.entries({ hooks: 'a hook is a command', rebootSentinelCommand: 'a command', rebootCommand: 'a command', metrics: 'a folder written as root', dockerExec: 'another way to reach nodes' })) {
      if (others[key] !== undefined) throw new ConfigError(key, `does not go with access: agent (${why}; the agent runs only the runbook)`);
    }
  }
  return access;
}

/** pendingUpgrades: true (all that apt has pending) or {"origin": "Debian-Security"}; never beside targets. */
function pendingConfig(raw: unknown, targets: unknown): FleetConfig['pendingUpgrades'] {
  if (raw === undefined || raw === false) return undefined;
  if (targets !== undefined) throw new ConfigError('pendingUpgrades', 'is instead of targets: give one of them');
  if (raw === true) return {};
  if (!isRecord(raw)) throw new ConfigError('pendingUpgrades', `must be true or {"origin": "Debian-Security"} (got ${JSON.stringify(raw)})`);
  only('pendingUpgrades', raw, ['origin']);
  if (typeof raw.origin !== 'string' || !ORIGIN_PATTERN.test(raw.origin)) throw new ConfigError('pendingUpgrades.origin', `must be an origin as apt-get -s prints it, e.g. Debian-Security (got ${JSON.stringify(raw.origin)})`);
  return { origin: raw.origin };
}

/** reboot (never | always | if-required), rebootSentinelCommand (if-required only), rebootTimeoutSeconds, rebootCommand. */
function rebootConfig(policy: unknown, sentinelCommand: unknown, timeout: unknown, command: unknown): FleetConfig['reboot'] {
  const p = policy ?? 'never';
  if (!(REBOOT_POLICIES as readonly unknown[]).includes(p)) throw new ConfigError('reboot', `must be one of ${REBOOT_POLICIES.join(', ')} (got ${JSON.stringify(p)})`);
  if (sentinelCommand !== undefined && (typeof sentinelCommand !== 'string' || !sentinelCommand.trim())) throw new ConfigError('rebootSentinelCommand', 'must be a command (a non-empty string)');
  if (sentinelCommand !== undefined && p !== 'if-required') throw new ConfigError('rebootSentinelCommand', 'is read only with reboot: if-required');
  const t = timeout ?? DEFAULT_RUN_OPTIONS.rebootTimeoutSeconds;
  if (typeof t !== 'number' || !Number.isInteger(t) || t <= 0) throw new ConfigError('rebootTimeoutSeconds', `must be a positive whole number of seconds (got ${JSON.stringify(t)})`);
  if (command !== undefined && (typeof command !== 'string' || !command.trim())) throw new ConfigError('rebootCommand', 'must be a command (a non-empty string), e.g. "systemctl reboot"');
  if (command !== undefined && p === 'never') throw new ConfigError('rebootCommand', 'is read only with reboot: always or if-required');
  return { policy: p as RebootPolicy, ...(sentinelCommand !== undefined ? { sentinelCommand: sentinelCommand as string } : {}), ...(command !== undefined ? { command: command as string } : {}), timeoutSeconds: t };
}

/** blockingPodSelector (a label selector), blockingPodScope (node | cluster), blockingPodTimeoutSeconds (600). */
function blockingPodsConfig(selector: unknown, scope: unknown, timeout: unknown): { blockingPods?: BlockingPods } {
  if (selector === undefined) {
    if (scope !== undefined || timeout !== undefined) throw new ConfigError(scope !== undefined ? 'blockingPodScope' : 'blockingPodTimeoutSeconds', 'is read only with blockingPodSelector');
    return {};
  }
  // The API judges the selector itself; here only that it is one string of a selector's characters.
  if (typeof selector !== 'string' || !/^[A-Za-z0-9._/=!,() -]+$/.test(selector)) throw new ConfigError('blockingPodSelector', `invalid label selector ${JSON.stringify(selector)}`);
  const s = scope ?? 'node';
  if (!(BLOCKING_POD_SCOPES as readonly unknown[]).includes(s)) throw new ConfigError('blockingPodScope', `must be node or cluster (got ${JSON.stringify(s)})`);
  const t = timeout ?? 600;
  if (typeof t !== 'number' || !Number.isInteger(t) || t <= 0) throw new ConfigError('blockingPodTimeoutSeconds', `must be a positive whole number of seconds (got ${JSON.stringify(t)})`);
  return { blockingPods: { selector, scope: s as BlockingPods['scope'], timeoutSeconds: t } };
}
