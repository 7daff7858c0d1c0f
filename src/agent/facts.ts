import { isConflict, isNotFound, type Cluster } from '../cluster/api.js';
import { writeConfigMap } from '../cluster/configmaps.js';
import { listAll } from '../cluster/list.js';
import { availableVersionsScript, cleanVersions, installedScript, parseAvailableVersions, parsePackageDb } from '../node/packages/index.js';
import { parseRebootRequired, rebootRequiredScript } from '../node/reboot.js';
import { AGENT_NAMESPACE } from './run-object.js';
import { command } from '../node/transport/quote.js';
import type { AuditVerdict } from '../leaks/types.js';

// What a node's agent tells about its node, with no session to it: the installed and offered versions of the runtime
// packages, and whether the node wants a reboot. A fleet's `pulumi preview` with `access: agent` reads these instead
// of asking each node over SSH. Read on the node every few minutes and written when they change (and at least hourly,
// so their age says the agent is alive), and after each run it started: an idle fleet's facts cost the API little.

export const factsConfigMapName = (node: string) => `node-maint-facts-${node}`;
export const FACTS_LABEL = 'node-maint.io/facts';
/** The packages an agent reports unless its DaemonSet names others (NODE_MAINT_PACKAGES). */
export const DEFAULT_FACT_PACKAGES = ['containerd', 'containerd.io', 'docker.io', 'docker-ce', 'runc'];
/** How often an agent writes its facts when nothing in them changed. */
export const FACTS_REFRESH_MS = 60 * 60_000;
/** Facts older than this are not taken: the agent is not running, or cannot read its node. */
export const FACTS_MAX_AGE_MS = 2 * FACTS_REFRESH_MS;

export interface NodeFacts {
  node: string;
  /** When the agent read them (its clock). */
  at: string;
  /** Each package's cleanly installed version, or 'not installed'. */
  installed: Record<string, string>;
  /** What the node's package sources offer of each. */
  offered: Record<string, string[]>;
  /** Why the node wants a reboot (Debian's sentinel), absent when it does not. */
  rebootRequired?: string;
  /** The leak audit of the last run the agent started (its textfile), absent before the first. */
  lastAudit?: LastAudit;
  /** What an uninstall did on the node ("uninstalled: ..." or "refused: ..."): its agent's last word. */
  uninstall?: string;
}

export interface LastAudit {
  verdict: AuditVerdict;
  /** Findings of every class. */
  findings: number;
  /** When it was written (the textfile's time). */
  at: string;
}

const SPLIT = '@@node-maint-offered';
const REBOOT_SPLIT = '@@node-maint-reboot';
const AUDIT_SPLIT = '@@node-maint-audit';

/** The audit textfile's time and its verdict and findings gauges; nothing when there is none. */
export const lastAuditScript = (file: string) => `if [ -f ${command(file)} ]; then stat -c %Y ${command(file)}; grep -E '^node_maint_audit_(verdict|findings)[{]' ${command(file)}; fi; true`;

/** The facts' one read of the node; `auditFile`: the audit textfile its agent's runs write. */
export function factsScript(packages: string[], auditFile: string): string {
  return [`{ ${installedScript(packages)}; } || true`, `echo ${SPLIT}`, availableVersionsScript(packages), 'true', `echo ${REBOOT_SPLIT}`, rebootRequiredScript(), `echo ${AUDIT_SPLIT}`, lastAuditScript(auditFile)].join('\n');
}

/** The last audit from its textfile's time and gauges (metrics/audit.ts); undefined when there is none or it is unreadable. */
export function parseLastAudit(out: string): LastAudit | undefined {
  const [time = '', ...gauges] = out.split('\n').filter(Boolean);
  const verdict = gauges.map((l) => /^node_maint_audit_verdict\{.*verdict="(clean|leaks|unverifiable)".*\} 1$/.exec(l)?.[1]).find(Boolean) as AuditVerdict | undefined;
  if (!/^\d+$/.test(time) || !verdict) return undefined;
  const findings = gauges.reduce((sum, l) => sum + Number(/^node_maint_audit_findings\{.*\} (\d+)$/.exec(l)?.[1] ?? 0), 0);
  return { verdict, findings, at: new Date(Number(time) * 1000).toISOString() };
}

export function parseFacts(node: string, packages: string[], out: string, at = new Date()): NodeFacts {
  const [beforeAudit = '', audit = ''] = out.split(`${AUDIT_SPLIT}\n`);
  const [observed = '', reboot = ''] = beforeAudit.split(`${REBOOT_SPLIT}\n`);
  const [dpkg = '', madison = ''] = observed.split(`${SPLIT}\n`);
  const clean = cleanVersions(parsePackageDb(dpkg.split('\n').filter(Boolean), [], false));
  const available = parseAvailableVersions(madison);
  const rebootRequired = parseRebootRequired(reboot);
  const lastAudit = parseLastAudit(audit);
  return {
    node,
    at: at.toISOString(),
    installed: Object.fromEntries(packages.map((p) => [p, clean[p] || 'not installed'])),
    offered: Object.fromEntries(packages.map((p) => [p, [...(available.get(p) ?? [])]])),
    ...(rebootRequired ? { rebootRequired } : {}),
    ...(lastAudit ? { lastAudit } : {}),
  };
}

/** What two readings of the facts share when nothing on the node changed (all but when they were read). */
export const factsKey = (facts: NodeFacts) => JSON.stringify({ ...facts, at: undefined });

/**
 * The facts written where a fleet reads them: over the version last written (`resourceVersion`, so no read first),
 * created the first time; a version someone else moved on is read again once. The version written.
 */
export async function publishFacts(cluster: Cluster, facts: NodeFacts, resourceVersion?: string): Promise<string | undefined> {
  const name = factsConfigMapName(facts.node);
  const path = `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps/${name}`;
  const write = async (version: string | undefined) => {
    const written = await writeConfigMap(cluster, AGENT_NAMESPACE, name, { facts: JSON.stringify(facts) }, { labels: { [FACTS_LABEL]: 'true', 'app.kubernetes.io/part-of': 'node-maint' }, resourceVersion: version });
    return written?.metadata?.resourceVersion;
  };
  try {
    return await write(resourceVersion);
  } catch (e) {
    if (!isConflict(e) && !isNotFound(e)) throw e;
    const existing = await cluster.get<{ metadata: { resourceVersion: string } }>(path).catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
    return write(existing?.metadata.resourceVersion);
  }
}

/** Every node's facts, in one list, each node's from the object named for it: what a fleet's preview reads. */
export async function readAllFacts(cluster: Cluster): Promise<Map<string, NodeFacts>> {
  const items = await listAll<{ metadata: { name: string }; data?: { facts?: string } }>(cluster, `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps?labelSelector=${encodeURIComponent(`${FACTS_LABEL}=true`)}`);
  const out = new Map<string, NodeFacts>();
  for (const item of items) {
    const node = item.metadata.name.startsWith(factsConfigMapName('')) ? item.metadata.name.slice(factsConfigMapName('').length) : undefined;
    try {
      const facts = JSON.parse(item.data?.facts ?? '') as NodeFacts;
      // The name is what the admission policy holds an agent to: facts that claim another node are not that node's.
      if (node && facts.node === node) out.set(node, facts);
    } catch {
      // a ConfigMap that is not the agent's: not a node's facts
    }
  }
  return out;
}
