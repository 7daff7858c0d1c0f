import { Cluster } from '../cluster/api.js';
import { messageOf } from '../errors.js';
import { validateLeaseNamespace, validateNodeName } from '../runbook/options.js';
import { agentTick } from './agent.js';
import { DEFAULT_FACT_PACKAGES, factsScript, parseFacts, publishFacts } from './facts.js';
import { AUDIT_FILE, readOnHost } from './host.js';
import { AGENT_NAMESPACE, agentConfigMapName, readExchange } from './protocol.js';

// The agent's pod: its node from the downward API (NODE_NAME), the cluster from its ServiceAccount, a look at its
// ConfigMap every POLL_MS. It listens on no port. Its own credentials only read and write ConfigMaps of its own
// namespace and ask short-lived tokens of the runbook's ServiceAccount, which each run gets in a root-only file on the host.

/** How often a run under way is looked at (its output published, a stop passed on). */
const POLL_MS = 2_000;
/** Idle, the agent watches its ConfigMap instead (a request wakes it), and looks again at least this often. */
const IDLE_SECONDS = 60;
/** How often the node's facts are read and published (and after each run the agent started). */
const FACTS_MS = 5 * 60_000;
/** A run's token outlives its longest wait (a reboot, a drain): the agent gives a fresh one at each start of the run. */
const TOKEN_SECONDS = 3 * 3600;

async function main(): Promise<void> {
  const node = validateNodeName(process.env.NODE_NAME ?? '');
  // The runbook's ServiceAccount (runbooks/rbac.yaml), whose short-lived tokens the runs get.
  const runAsNamespace = validateLeaseNamespace(process.env.NODE_MAINT_RUN_AS_NAMESPACE ?? 'kube-system');
  const runAs = process.env.NODE_MAINT_RUN_AS ?? 'node-maint';
  const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
  const cluster = await Cluster.connect({ onRetry: log });
  log(`agent for ${node}: requests in ${AGENT_NAMESPACE}/node-maint-agent-${node}, runs as ${runAsNamespace}/${runAs}`);
  const setup = { cluster, node, namespace: AGENT_NAMESPACE, log, credentials: () => cluster.serviceAccountKubeconfig(runAsNamespace, runAs, TOKEN_SECONDS) };
  const packages = (process.env.NODE_MAINT_PACKAGES ?? DEFAULT_FACT_PACKAGES.join(',')).split(',').filter(Boolean);
  const facts = async () => publishFacts(cluster, parseFacts(node, packages, await readOnHost(factsScript(packages, AUDIT_FILE)))).catch((e: unknown) => log(`could not publish the node's facts: ${messageOf(e)}`));
  let factsAt = 0;
  for (;;) {
    const look = await agentTick(setup).catch((e: unknown) => void log(`could not look at the request: ${messageOf(e)}`));
    if (look === 'ended' || Date.now() - factsAt > FACTS_MS) {
      factsAt = Date.now();
      await facts();
    }
    if (look === 'idle') await untilRequest(cluster, node).catch((e: unknown) => log(`could not watch the requests: ${messageOf(e)}`));
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Idle: until the node's request ConfigMap changes (a watch from the version listed; a request already there returns
 * at once), or IDLE_SECONDS pass. One watch an idle node instead of a GET every 2 s: 1,000 nodes made 500 GET/s.
 */
async function untilRequest(cluster: Cluster, node: string): Promise<void> {
  const selector = `fieldSelector=${encodeURIComponent(`metadata.name=${agentConfigMapName(node)}`)}`;
  const path = `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps`;
  const list = await cluster.get<{ metadata: { resourceVersion: string }; items: Array<{ data?: Record<string, string> }> }>(`${path}?${selector}`);
  const x = readExchange(list.items[0]?.data);
  if (x.request && x.exit === undefined) return;
  const watch = cluster.watch(`${path}?watch=1&${selector}&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=${IDLE_SECONDS}`, () => watch.stop());
  await watch.done;
}

process.on('SIGTERM', () => process.exit(0));
await main();
