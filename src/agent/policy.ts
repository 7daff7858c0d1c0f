import { ORIGIN_PATTERN } from '../node/packages/pending.js';
import { load } from 'js-yaml';
import { usageError } from '../errors.js';
import { validateLeaseNamespace } from '../runbook/options.js';
import type { RunSpec } from './spec.js';

// What a MaintenanceRun may ask of a node, as the node's owner set it: the agent's own configuration (the ConfigMap
// node-maint-agent-policy beside its DaemonSet, which only those who administer the agent's namespace write), never
// the requester's. Whatever it does not allow is refused by name, with nothing started.

export interface AgentPolicy {
  /** The packages a run's targets may name. */
  packages: string[];
  /** A target older than the version installed. */
  downgrades: boolean;
  /** apt's pending upgrades (whatever packages apt would upgrade), and from which origins (empty: any). */
  pendingUpgrades: boolean;
  pendingOrigins: string[];
  /** A reboot as a step of the run (drained first, proven after). */
  reboot: boolean;
  /** The weakening options of upgrade-node, each off unless the owner allows it. */
  controlPlane: boolean;
  noRollback: boolean;
  networkOnlyProof: boolean;
  deleteEmptyDirData: boolean;
  force: boolean;
  gracePeriodOverride: boolean;
  /** An audit of the whole cluster's IPAM (reads only). */
  clusterWideAudit: boolean;
  /** Where the node's Lease is (shared with runs over SSH) and where the smoke pod runs (Pod Security restricted). */
  leaseNamespace: string;
  smokeNamespace: string;
}

/** Where the agent's pod reads its policy (runbooks/agent/daemonset.yaml mounts the ConfigMap there). */
export const POLICY_FILE = '/etc/node-maint/policy.yaml';

const DEFAULTS: AgentPolicy = {
  packages: [],
  downgrades: false,
  pendingUpgrades: false,
  pendingOrigins: [],
  reboot: false,
  controlPlane: false,
  noRollback: false,
  networkOnlyProof: false,
  deleteEmptyDirData: false,
  force: false,
  gracePeriodOverride: false,
  clusterWideAudit: false,
  leaseNamespace: 'kube-system',
  smokeNamespace: 'node-maint-smoke',
};

const PACKAGE = /^[a-z0-9][a-z0-9+.-]{0,127}$/;
const ORIGIN = ORIGIN_PATTERN;

/** The policy from its file's text; a key it does not know, or a value of the wrong kind, is an error (never ignored). */
export function parsePolicy(text: string): AgentPolicy {
  let raw: unknown;
  try {
    raw = load(text);
  } catch (e) {
    throw usageError(`the agent's policy is not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (raw === undefined || raw === null) return { ...DEFAULTS };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw usageError("the agent's policy must be a mapping of its keys");
  const out: Record<string, unknown> = { ...DEFAULTS };
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const fallback = (DEFAULTS as unknown as Record<string, unknown>)[key];
    if (fallback === undefined) throw usageError(`the agent's policy has an unknown key ${JSON.stringify(key)} (known: ${Object.keys(DEFAULTS).join(', ')})`);
    if (typeof fallback === 'boolean' && typeof value !== 'boolean') throw usageError(`the agent's policy: ${key} must be true or false`);
    if (Array.isArray(fallback)) {
      const pattern = key === 'packages' ? PACKAGE : ORIGIN;
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && pattern.test(v))) throw usageError(`the agent's policy: ${key} must be a list of ${key === 'packages' ? 'package names' : 'origins as apt prints them'}`);
    }
    if (typeof fallback === 'string') validateLeaseNamespace(String(value), `${key} in the agent's policy`);
    out[key] = value;
  }
  return out as unknown as AgentPolicy;
}

/**
 * Each thing the spec asks that the policy does not allow, said by name (empty: allowed). Downgrades are the agent's
 * to find, on the node (it knows what is installed): `downgrading` lists the targets older than what is installed.
 */
export function policyRefusals(spec: RunSpec, policy: AgentPolicy, downgrading: string[] = []): string[] {
  const no: string[] = [];
  const not = (what: string, key: keyof AgentPolicy) => no.push(`${what} (the agent's policy: ${key}: false)`);
  if (spec.command === 'audit') {
    if (spec.audit?.clusterWide && !policy.clusterWideAudit) not('an audit of the whole cluster', 'clusterWideAudit');
    return no;
  }
  const u = spec.upgrade ?? {};
  for (const t of u.targets ?? []) {
    if (!policy.packages.includes(t.package)) no.push(`the package ${t.package} (the agent's policy allows ${policy.packages.join(', ') || 'no package'})`);
  }
  for (const d of downgrading) if (!policy.downgrades) no.push(`a downgrade: ${d} (the agent's policy: downgrades: false)`);
  if (u.pendingUpgrades) {
    if (!policy.pendingUpgrades) not("apt's pending upgrades", 'pendingUpgrades');
    else if (policy.pendingOrigins.length > 0 && !policy.pendingOrigins.includes(u.pendingUpgrades.origin ?? '')) {
      no.push(`pending upgrades ${u.pendingUpgrades.origin ? `of ${u.pendingUpgrades.origin}` : 'of every origin'} (the agent's policy allows those of ${policy.pendingOrigins.join(', ')})`);
    }
  }
  if (u.reboot && u.reboot !== 'never' && !policy.reboot) not('a reboot', 'reboot');
  if (u.allowControlPlane && !policy.controlPlane) not('a control-plane node', 'controlPlane');
  if (u.allowNoRollback && !policy.noRollback) not('a run that could not roll back', 'noRollback');
  if (u.proof === 'network-only' && !policy.networkOnlyProof) not('the network-only proof', 'networkOnlyProof');
  if (u.drain?.deleteEmptyDirData && !policy.deleteEmptyDirData) not("deleting pods' emptyDir data", 'deleteEmptyDirData');
  if (u.drain?.force && !policy.force) not('deleting pods no controller recreates', 'force');
  if (u.drain?.gracePeriodSeconds !== undefined && u.drain.gracePeriodSeconds !== -1 && !policy.gracePeriodOverride) not(`a grace period of ${u.drain.gracePeriodSeconds}s instead of each pod's own`, 'gracePeriodOverride');
  return no;
}
