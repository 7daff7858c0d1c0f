import { readFile } from 'node:fs/promises';
import { Cluster } from '../cluster/api.js';
import { readLease } from '../cluster/lease.js';
import { messageOf } from '../errors.js';
import { journalOf } from '../runbook/journal.js';
import { validateNodeName } from '../runbook/options.js';
import { agentTick } from './agent.js';
import { checkAgentRights } from './rights.js';
import { DEFAULT_FACT_PACKAGES, factsScript, parseFacts } from './facts.js';
import { factsLoop } from './facts-loop.js';
import { AUDIT_FILE, readOnHost } from './host.js';
import { parsePolicy, POLICY_FILE, type AgentPolicy } from './policy.js';
import { RunWatch } from './run-watch.js';
import { uninstallMain } from './uninstall.js';

// The agent's pod: its node from the downward API (NODE_NAME), the cluster from its ServiceAccount (a token kubelet
// binds to the pod, so it carries the node's name), its owner's policy from a file. It listens on no port. Idle, it
// holds one watch on its node's MaintenanceRun and makes no other request but an hourly write of the node's facts;
// while a run is under way it looks every POLL_MS.

/** How often a run under way is looked at (its output published, a stop passed on). */
const POLL_MS = 2_000;

/** The owner's policy, read again at each use (kubelet updates the file when its ConfigMap changes); or why there is none. */
async function readPolicy(): Promise<AgentPolicy | string> {
  let text: string;
  try {
    text = await readFile(POLICY_FILE, 'utf8');
  } catch {
    return `this agent has no policy (${POLICY_FILE}, from the ConfigMap node-maint-agent-policy): its owner allowed nothing`;
  }
  try {
    return parsePolicy(text);
  } catch (e) {
    return `${messageOf(e)} (${POLICY_FILE}): nothing is allowed until it is fixed`;
  }
}

async function main(): Promise<void> {
  if (!process.env.NODE_NAME) throw new Error('NODE_NAME is not set (the DaemonSet sets it from spec.nodeName, through the downward API)');
  const node = validateNodeName(process.env.NODE_NAME);
  const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
  const cluster = await Cluster.connect({ onRetry: log });
  if (process.argv.includes('--uninstall')) await uninstallMain(cluster, node, log);
  const policy = await readPolicy();
  log(`agent for ${node}: runs asked in MaintenanceRun ${node}; ${typeof policy === 'string' ? policy : `packages ${policy.packages.join(', ') || 'none'}, leases in ${policy.leaseNamespace}, smoke pods in ${policy.smokeNamespace}`}`);
  // A drift between what the manifest grants and what this code needs is said at the start, not found mid-run.
  await checkAgentRights(cluster, node, typeof policy === 'string' ? 'kube-system' : policy.leaseNamespace, log).catch((e: unknown) => log(`could not check this agent's rights: ${messageOf(e)}`));
  const setup = { cluster, node, log, policy: readPolicy, journal: async (ns: string) => journalOf(await readLease(cluster, ns, node)), tokens: new Map() };
  const packages = (process.env.NODE_MAINT_PACKAGES ?? DEFAULT_FACT_PACKAGES.join(',')).split(',').filter(Boolean);
  const facts = factsLoop(cluster, async () => parseFacts(node, packages, await readOnHost(factsScript(packages, AUDIT_FILE))), log);
  const watch = new RunWatch(cluster, node);
  for (;;) {
    const look = await agentTick(setup).catch((e: unknown) => void log(`could not look at the MaintenanceRun: ${messageOf(e)}`));
    if (look === 'ended') facts.now();
    if (look === 'idle') await watch.untilWork().catch((e: unknown) => log(`could not watch the MaintenanceRun: ${messageOf(e)}`));
    else await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

process.on('SIGTERM', () => process.exit(0));
// What stops the agent from starting (no NODE_NAME, no cluster) is one line in its pod's log, not a stack trace.
await main().catch((e: unknown) => {
  process.stderr.write(`node-maint agent: cannot start: ${messageOf(e)}\n`);
  process.exitCode = 1;
});
