import { randomBytes } from 'node:crypto';
import { isNotFound, type Cluster } from '../cluster/api.js';
import { writeConfigMap } from '../cluster/configmaps.js';
import { listPodsOnNode, isPodReady } from '../cluster/pods.js';
import type { Pod } from '../cluster/types.js';
import { requirePermissions, upgradePermissions, type Permission } from '../cluster/permissions.js';
import { messageOf, RunbookError } from '../errors.js';
import { AGENT_NAMESPACE, agentConfigMapName, readExchange, writeExchange, type AgentCommand, type AgentExchange } from './protocol.js';

// The caller's side of a run through a node's agent (a person's --via agent, a fleet's node): it writes the request,
// then shows the run's progress and report as they are published, passes its stop on as the run's, and, if it
// dies, leaves the run going: the same request attaches to it again.

/** The label the agent's pods carry (runbooks/agent.yaml). */
export const AGENT_LABEL = 'app.kubernetes.io/name=node-maint-agent';
const POLL_MS = 1_000;
/** How long an agent may take to start a new request before the caller withdraws it. */
const PICKUP_MS = 60_000;

export interface AgentCall {
  command: AgentCommand;
  node: string;
  /** The request's arguments (requestArgs): NODE first. */
  args: string[];
  /** Where the run keeps its Lease (the caller's rights to what the run does are asked there). */
  leaseNamespace: string;
  stop: AbortSignal;
  /** Where the run's progress (stderr) and report (stdout) go. */
  io: { stdout(text: string): void; stderr(text: string): void };
}

/**
 * The request on the node's agent (or the run already under way there, attached to), followed to its end: the run's
 * progress to io.stderr, its report to io.stdout; its exit code. What a caller and a fleet's node both do.
 */
export async function runThroughAgent(cluster: Cluster, v: AgentCall): Promise<number> {
  const say = (line: string) => v.io.stderr(`node-maint: ${line}\n`);
  const { args } = v;
  const path = `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps/${agentConfigMapName(v.node)}`;
  // The caller's own rights: what the run does (as over SSH), and the request's ConfigMap.
  const exchange: Permission[] = ['get', 'create', 'update', 'patch'].map((verb) => ({ verb, group: '', resource: 'configmaps', namespace: AGENT_NAMESPACE, write: verb !== 'get' }));
  await requirePermissions(cluster, [...exchange, ...(v.command === 'upgrade-node' ? upgradePermissions(v.leaseNamespace, false) : [])], `the kubeconfig's user ${cluster.user}`, 'run through the agent', `runbooks/rbac.yaml grants what the run needs; the request needs get, create, update and patch of ConfigMaps in ${AGENT_NAMESPACE} (the agent's namespace)`);
  const existing = await cluster.get<{ metadata: { resourceVersion: string }; data?: Record<string, string> }>(path).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
  const x = existing ? readExchange(existing.data) : undefined;
  const same = x?.request?.command === v.command && JSON.stringify(x.request.args) === JSON.stringify(args);
  // A request withdrawn unstarted (its caller gave up on the agent) is no run: a new one replaces it.
  const withdrawn = x?.stop !== undefined && !x.unit;
  if (x?.request && x.exit === undefined && !withdrawn) {
    say(`attaching to the run already under way on ${v.node} through its agent (${x.request.command} ${x.request.args.join(' ')}, asked by ${x.request.by} at ${x.request.at})${same ? '' : ': not the command given now, which does not start'}`);
  } else if (x?.request && same && !x.delivered && !withdrawn) {
    say(`the run this command started on ${v.node} at ${x.request.at} ended while no caller followed it: its output and report follow`);
  } else {
    await requireReadyAgent(cluster, v.node);
    const request = { id: randomBytes(6).toString('hex'), command: v.command, args, by: cluster.user, at: new Date().toISOString() };
    const data = writeExchange({ request, output: '', outputFrom: 0 });
    await writeConfigMap(cluster, AGENT_NAMESPACE, agentConfigMapName(v.node), data, { labels: { 'app.kubernetes.io/part-of': 'node-maint' }, resourceVersion: existing?.metadata.resourceVersion });
    say(`asked the agent on ${v.node} to run ${v.command} ${args.join(' ')} (request ${request.id}); its output follows`);
  }
  return follow(cluster, path, v, say);
}

/** A new request goes only to a node whose agent is there and Ready (one mid-run may be down: its kubelet is stopped). */
async function requireReadyAgent(cluster: Cluster, node: string): Promise<void> {
  const pods = (await listPodsOnNode(cluster, node)).filter((p) => p.metadata.labels?.['app.kubernetes.io/name'] === 'node-maint-agent');
  if (pods.length === 0) throw new RunbookError('preflight', `${node} has no node-maint agent (its DaemonSet is runbooks/agent.yaml; pods labelled ${AGENT_LABEL}); nothing was changed. Without it, run over SSH`);
  if (!pods.some(isPodReady)) throw new RunbookError('preflight', `the node-maint agent on ${node} is not Ready (${pods.map(describeAgentPod).join(', ')}); nothing was changed`);
}

/** "node-maint-agent-x: Pending, ErrImageNeverPull (Container image ... is not present with pull policy of Never)" */
function describeAgentPod(pod: Pod): string {
  const waiting = pod.status?.containerStatuses?.map((c) => c.state?.waiting as { reason?: string; message?: string } | undefined).find((w) => w?.reason);
  return `${pod.metadata.name}: ${pod.status?.phase ?? 'unknown'}${waiting ? `, ${waiting.reason}${waiting.message ? ` (${waiting.message})` : ''}` : ''}`;
}

async function follow(cluster: Cluster, path: string, v: AgentCall, say: (l: string) => void): Promise<number> {
  let seen = 0;
  let stopAsked = false;
  const asked = Date.now();
  let withdrawn = false;
  for (;;) {
    const x = readExchange((await cluster.get<{ data?: Record<string, string> }>(path).catch((e: unknown) => Promise.reject(goesOn(e, v.node)))).data);
    seen = printNew(x, seen, v.io);
    if (x.exit !== undefined) {
      if (x.report) v.io.stdout(x.report);
      await cluster.mergePatch(path, { data: { delivered: 'true' } });
      return x.exit;
    }
    if (v.stop.aborted && !stopAsked) {
      stopAsked = true;
      await cluster.mergePatch(path, { data: { stop: String(v.stop.reason ?? 'SIGINT') } });
      say(`passed ${String(v.stop.reason)} to the run on ${v.node} through its agent; waiting for it to stop at its next safe point`);
    }
    if (!x.unit && !withdrawn && Date.now() - asked > PICKUP_MS) {
      withdrawn = true;
      await cluster.mergePatch(path, { data: { stop: 'the caller, as no agent started the run' } });
      throw new RunbookError('preflight', `the agent on ${v.node} did not start the run within ${PICKUP_MS / 1000}s (its pod running? its log says why); the request was withdrawn and nothing was changed`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** The API lost while following: the run is the node's, and goes on; this caller only stops watching it. */
function goesOn(e: unknown, node: string): RunbookError {
  return new RunbookError('unreachable', `${messageOf(e)}: this caller stopped following the run on ${node}, which goes on there (its agent runs it); run the same command to attach to it again`, { cause: e });
}

/** Prints the output not printed yet; says what was dropped if the caller fell behind the kept tail. */
function printNew(x: AgentExchange, seen: number, io: AgentCall['io']): number {
  const end = x.outputFrom + Buffer.byteLength(x.output);
  if (end <= seen) return seen;
  if (seen < x.outputFrom) io.stderr(`node-maint: (${x.outputFrom - seen} bytes of the run's output were dropped before this caller read them)\n`);
  io.stderr(Buffer.from(x.output).subarray(Math.max(0, seen - x.outputFrom)).toString());
  return end;
}

