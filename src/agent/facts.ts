import { isNotFound, type Cluster } from '../cluster/api.js';
import { writeConfigMap } from '../cluster/configmaps.js';
import { listAll } from '../cluster/list.js';
import { availableVersionsScript, cleanVersions, installedScript, parseAvailableVersions, parsePackageDb } from '../node/packages/index.js';
import { parseRebootRequired, rebootRequiredScript } from '../node/reboot.js';
import { AGENT_NAMESPACE } from './protocol.js';

// What a node's agent tells about its node, with no session to it: the installed and offered versions of the runtime
// packages, and whether the node wants a reboot. A fleet's `pulumi preview` with `access: agent` reads these instead
// of asking each node over SSH. Written by the agent at its start, every FACTS_MS, and after each run it started.

export const factsConfigMapName = (node: string) => `node-maint-facts-${node}`;
export const FACTS_LABEL = 'node-maint.io/facts';
/** The packages an agent reports unless its DaemonSet names others (NODE_MAINT_PACKAGES). */
export const DEFAULT_FACT_PACKAGES = ['containerd', 'containerd.io', 'docker.io', 'docker-ce', 'runc'];
/** Facts older than this are not taken: the agent is not running, or cannot read its node. */
export const FACTS_MAX_AGE_MS = 15 * 60_000;

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
}

const SPLIT = '@@node-maint-offered';
const REBOOT_SPLIT = '@@node-maint-reboot';

export function factsScript(packages: string[]): string {
  return [`{ ${installedScript(packages)}; } || true`, `echo ${SPLIT}`, availableVersionsScript(packages), 'true', `echo ${REBOOT_SPLIT}`, rebootRequiredScript()].join('\n');
}

export function parseFacts(node: string, packages: string[], out: string, at = new Date()): NodeFacts {
  const [observed = '', reboot = ''] = out.split(`${REBOOT_SPLIT}\n`);
  const [dpkg = '', madison = ''] = observed.split(`${SPLIT}\n`);
  const clean = cleanVersions(parsePackageDb(dpkg.split('\n').filter(Boolean), [], false));
  const available = parseAvailableVersions(madison);
  const rebootRequired = parseRebootRequired(reboot);
  return {
    node,
    at: at.toISOString(),
    installed: Object.fromEntries(packages.map((p) => [p, clean[p] || 'not installed'])),
    offered: Object.fromEntries(packages.map((p) => [p, [...(available.get(p) ?? [])]])),
    ...(rebootRequired ? { rebootRequired } : {}),
  };
}

/** The facts written where a fleet reads them: created the first time, replaced after. */
export async function publishFacts(cluster: Cluster, facts: NodeFacts): Promise<void> {
  const name = factsConfigMapName(facts.node);
  const existing = await cluster.get<{ metadata: { resourceVersion: string } }>(`/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps/${name}`).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
  await writeConfigMap(cluster, AGENT_NAMESPACE, name, { facts: JSON.stringify(facts) }, { labels: { [FACTS_LABEL]: 'true', 'app.kubernetes.io/part-of': 'node-maint' }, resourceVersion: existing?.metadata.resourceVersion });
}

/** Every node's facts, in one list: what a fleet's preview reads instead of a session to each node. */
export async function readAllFacts(cluster: Cluster): Promise<Map<string, NodeFacts>> {
  const items = await listAll<{ data?: { facts?: string } }>(cluster, `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps?labelSelector=${encodeURIComponent(`${FACTS_LABEL}=true`)}`);
  const out = new Map<string, NodeFacts>();
  for (const item of items) {
    try {
      const facts = JSON.parse(item.data?.facts ?? '') as NodeFacts;
      if (typeof facts.node === 'string') out.set(facts.node, facts);
    } catch {
      // a ConfigMap that is not the agent's: not a node's facts
    }
  }
  return out;
}
