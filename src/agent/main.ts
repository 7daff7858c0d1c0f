import { Cluster } from '../cluster/api.js';
import { messageOf } from '../errors.js';
import { validateLeaseNamespace, validateNodeName } from '../runbook/options.js';
import { agentTick } from './agent.js';
import { DEFAULT_FACT_PACKAGES, factsScript, parseFacts, publishFacts } from './facts.js';
import { readOnHost } from './host.js';
import { AGENT_NAMESPACE } from './protocol.js';

// The agent's pod: its node from the downward API (NODE_NAME), the cluster from its ServiceAccount, a look at its
// ConfigMap every POLL_MS. It listens on no port. Its own credentials only read and write ConfigMaps of its own
// namespace and ask short-lived tokens of the runbook's ServiceAccount, which each run gets in a root-only file on the host.

const POLL_MS = 2_000;
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
  const facts = async () => publishFacts(cluster, parseFacts(node, packages, await readOnHost(factsScript(packages)))).catch((e: unknown) => log(`could not publish the node's facts: ${messageOf(e)}`));
  let factsAt = 0;
  for (;;) {
    const ended = await agentTick(setup).catch((e: unknown) => void log(`could not look at the request: ${messageOf(e)}`));
    if (ended || Date.now() - factsAt > FACTS_MS) {
      factsAt = Date.now();
      await facts();
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

process.on('SIGTERM', () => process.exit(0));
await main();
