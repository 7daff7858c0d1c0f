import { isAlreadyExists, isConflict, type Cluster } from '../cluster/api.js';
import { listAll } from '../cluster/list.js';
import { getNode } from '../cluster/nodes.js';
import { isPodReady } from '../cluster/pods.js';
import type { Pod } from '../cluster/types.js';
import { requirePermissions, type Permission } from '../cluster/permissions.js';
import { ExitCode, messageOf, RunbookError } from '../errors.js';
import { AGENT_NAMESPACE, askStop, createRun, DELIVERED_ANNOTATION, deleteRun, getRun, isEnded, isWithdrawn, markDelivered, RUN_GROUP, RUN_RESOURCE, type MaintenanceRun } from './run-object.js';
import { agentlessSeconds, describeRun, runOf, type RunSpec } from './spec.js';

// The caller's side of a run through a node's agent (a person's --via agent, a fleet's node): it writes the node's
// MaintenanceRun, then shows the run's progress and report as the agent publishes them, passes its stop on as the
// run's, and, if it dies, leaves the run going: the same ask attaches to it again.

/** The label the agent's pods carry (runbooks/agent/daemonset.yaml): a site that renames the DaemonSet keeps it. */
export const AGENT_LABEL = 'app.kubernetes.io/name=node-maint-agent';
const POLL_MS = 1_000;
/** How long an agent may take to claim a new run before the caller withdraws it. */
const PICKUP_MS = 60_000;
/** After a withdrawal, how long the caller waits to see whether the agent had claimed the run after all. */
const WITHDRAWAL_MS = 20_000;

/** What asking a run needs (runbooks/agent/requester.yaml): the node's MaintenanceRun, and a look at its agent's pod. */
export const REQUEST_PERMISSIONS: Permission[] = [
  ...['get', 'create', 'patch', 'delete'].map((verb) => ({ verb, group: RUN_GROUP, resource: RUN_RESOURCE, write: verb !== 'get' })),
  { verb: 'get', group: '', resource: 'nodes' },
  { verb: 'list', group: '', resource: 'pods', namespace: AGENT_NAMESPACE },
];

export interface AgentCall {
  /** The run asked, without its requester (the API server says who that is). */
  spec: Omit<RunSpec, 'requestedBy'>;
  stop: AbortSignal;
  /** Where the run's progress (stderr) and report (stdout) go. */
  io: { stdout(text: string): void; stderr(text: string): void };
}

/** Who the API server says this caller is (a MaintenanceRun must name its requester so: the admission policy checks). */
export async function whoAmI(cluster: Cluster): Promise<string> {
  const review = await cluster.request<{ status?: { userInfo?: { username?: string } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  const name = review.status?.userInfo?.username;
  if (!name) throw new RunbookError('preflight', 'the API server did not say who this kubeconfig\'s user is (SelfSubjectReview); nothing was asked');
  return name;
}

/**
 * The run on the node's agent (or the run already under way there, attached to), followed to its end: its progress
 * to io.stderr, its report to io.stdout; its exit code. What a caller and a fleet's node both do.
 */
export async function runThroughAgent(cluster: Cluster, v: AgentCall): Promise<number> {
  const say = (line: string) => v.io.stderr(`node-maint: ${line}\n`);
  const node = v.spec.nodeName;
  await requirePermissions(cluster, REQUEST_PERMISSIONS, `the kubeconfig's user ${cluster.user}`, 'run through the agent', 'runbooks/agent/requester.yaml has the rights to bind: maintenanceruns get, create, patch and delete, get nodes, and list pods in node-maint');
  await getNode(cluster, node);
  const spec: RunSpec = { ...v.spec, requestedBy: await whoAmI(cluster) };
  for (let read = 1; ; read++) {
    const existing = await getRun(cluster, node);
    if (existing && !isEnded(existing) && !isWithdrawn(existing)) return attach(cluster, v, existing, spec, say);
    // An ended run of the same ask that started and whose end no caller printed: printed now, not asked again.
    if (existing && isEnded(existing) && (existing.status?.starts ?? 0) > 0 && runOf(existing.spec) === runOf(spec) && existing.metadata.annotations?.[DELIVERED_ANNOTATION] !== 'true') {
      say(`the run asked on ${node} at ${existing.metadata.creationTimestamp} ended while no caller followed it: its output and report follow`);
      return follow(cluster, v, existing, { say });
    }
    await requireReadyAgent(cluster, node);
    // An ended run is still written after its end (the agent records its unit removed, its caller marks it read):
    // a delete that meets a newer version decides again from a new read.
    const deleted = !existing || (await deleteRun(cluster, existing).then(
      () => true,
      (e: unknown) => (isConflict(e) && read < 5 ? false : Promise.reject(e)),
    ));
    if (deleted) return ask(cluster, v, spec, say);
  }
}

/** A new run: its MaintenanceRun created (or another caller's, created first, attached to), then followed. */
async function ask(cluster: Cluster, v: AgentCall, spec: RunSpec, say: (l: string) => void): Promise<number> {
  const node = spec.nodeName;
  let created: MaintenanceRun;
  try {
    created = await createRun(cluster, spec);
  } catch (e) {
    // Another caller asked first, between the read and the write: this one attaches to its run.
    if (!isAlreadyExists(e)) throw e;
    return attach(cluster, v, (await getRun(cluster, node))!, spec, say);
  }
  say(`asked the agent on ${node} for: ${describeRun(spec)} (MaintenanceRun ${node}); its output follows`);
  return follow(cluster, v, created, { say, asked: Date.now() });
}

function attach(cluster: Cluster, v: AgentCall, existing: MaintenanceRun, spec: RunSpec, say: (l: string) => void): Promise<number> {
  const same = runOf(existing.spec) === runOf(spec);
  const what = `${describeRun(existing.spec)}, asked by ${existing.spec.requestedBy} at ${existing.metadata.creationTimestamp}`;
  say(`attaching to the run already under way on ${spec.nodeName} through its agent (${what})${same ? '' : `: not what was asked now (${describeRun(spec)}), which does not start`}`);
  return follow(cluster, v, existing, { say, other: same ? undefined : what });
}

/** A new run goes only to a node whose agent is there and Ready (one mid-run may be down: its kubelet is stopped). */
async function requireReadyAgent(cluster: Cluster, node: string): Promise<void> {
  const pods = await listAll<Pod>(cluster, `/api/v1/namespaces/${AGENT_NAMESPACE}/pods?labelSelector=${encodeURIComponent(AGENT_LABEL)}&fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`);
  if (pods.length === 0) throw new RunbookError('preflight', `${node} has no node-maint agent (its DaemonSet is runbooks/agent/; pods labelled ${AGENT_LABEL} in ${AGENT_NAMESPACE}); nothing was changed. Without it, run over SSH`);
  if (!pods.some(isPodReady)) throw new RunbookError('preflight', `the node-maint agent on ${node} is not Ready (${pods.map(describeAgentPod).join(', ')}); nothing was changed`);
}

/** "node-maint-agent-x: Pending, ErrImageNeverPull (Container image ... is not present with pull policy of Never)" */
function describeAgentPod(pod: Pod): string {
  const waiting = pod.status?.containerStatuses?.map((c) => c.state?.waiting as { reason?: string; message?: string } | undefined).find((w) => w?.reason);
  return `${pod.metadata.name}: ${pod.status?.phase ?? 'unknown'}${waiting ? `, ${waiting.reason}${waiting.message ? ` (${waiting.message})` : ''}` : ''}`;
}

interface Following {
  say: (line: string) => void;
  /** When this caller asked the run (it withdraws it if no agent claims it in time). */
  asked?: number;
  /** The run followed is not the one asked: what it is. */
  other?: string;
}

async function follow(cluster: Cluster, v: AgentCall, first: MaintenanceRun, f: Following): Promise<number> {
  const node = first.metadata.name;
  let run = first;
  let seen = 0;
  let stopAsked = !!first.spec.stop;
  let withdrawnAt: number | undefined;
  let changedAt = Date.now();
  for (;;) {
    seen = printNew(run, seen, v.io);
    if (isEnded(run)) return finish(cluster, v, run, f, withdrawnAt !== undefined);
    if (v.stop.aborted && !stopAsked) {
      stopAsked = true;
      await askStop(cluster, node, String(v.stop.reason ?? 'SIGINT'));
      f.say(`passed ${String(v.stop.reason)} to the run on ${node} through its agent; waiting for it to stop at its next safe point`);
    }
    const claimed = !!run.status?.phase;
    if (!claimed && f.asked !== undefined && withdrawnAt === undefined && Date.now() - f.asked > PICKUP_MS) {
      withdrawnAt = Date.now();
      await askStop(cluster, node, 'withdrawn by its caller: no agent claimed it');
    }
    if (!claimed && withdrawnAt !== undefined && Date.now() - withdrawnAt > WITHDRAWAL_MS) throw notClaimed(node);
    const silentFor = (Date.now() - changedAt) / 1000;
    if (claimed && silentFor > agentlessSeconds(run.spec)) {
      throw new RunbookError('unreachable', `the agent on ${node} has written nothing for ${Math.round(silentFor)}s, longer than the run may go without it (${agentlessSeconds(run.spec)}s): its node down? The run may go on there (its last step: ${run.status?.step ?? 'none'}); this caller stopped following it; run the same command to attach again`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
    const next = await getRun(cluster, node).catch((e: unknown) => Promise.reject(goesOn(e, node)));
    if (!next) throw new RunbookError('internal', `the MaintenanceRun ${node} was deleted while this caller followed it (its run, if it started, goes on: its journal and Lease say where it is)`);
    if (next.metadata.uid !== run.metadata.uid) throw new RunbookError('internal', `the MaintenanceRun ${node} was replaced by another while this caller followed it`);
    if (next.metadata.resourceVersion !== run.metadata.resourceVersion) changedAt = Date.now();
    run = next;
  }
}

const notClaimed = (node: string) => new RunbookError('preflight', `the agent on ${node} did not start the run within ${PICKUP_MS / 1000}s (its pod running? its log says why); the request was withdrawn, so no agent will start it, and nothing was changed`);

async function finish(cluster: Cluster, v: AgentCall, run: MaintenanceRun, f: Following, withdrew: boolean): Promise<number> {
  const status = run.status!;
  // Withdrawn by this caller and ended by the agent without a start: nothing ran.
  if (withdrew && !status.starts) throw notClaimed(run.metadata.name);
  if (status.report) v.io.stdout(status.report);
  await markDelivered(cluster, run.metadata.name).catch((e: unknown) => f.say(`could not mark the run's report as read: ${messageOf(e)}`));
  if (status.phase === 'Refused' && !status.report) throw new RunbookError('usage', status.message ?? 'the agent refused the request');
  if (f.other) {
    f.say(`the run followed (${f.other}) ended with exit ${status.exitCode}; the run asked now did not start: run the same command again`);
    return ExitCode.otherRun;
  }
  return status.exitCode ?? ExitCode.internal;
}

/** The API lost while following: the run is the node's, and goes on; this caller only stops watching it. */
function goesOn(e: unknown, node: string): RunbookError {
  return new RunbookError('unreachable', `${messageOf(e)}: this caller stopped following the run on ${node}, which goes on there (its agent runs it); run the same command to attach to it again`, { cause: e });
}

/** Prints the output not printed yet; says what was dropped if the caller fell behind the kept tail. */
function printNew(run: MaintenanceRun, seen: number, io: AgentCall['io']): number {
  const output = run.status?.output ?? '';
  const from = run.status?.outputFrom ?? 0;
  const end = from + Buffer.byteLength(output);
  if (end <= seen) return seen;
  if (seen < from) io.stderr(`node-maint: (${from - seen} bytes of the run's output were dropped before this caller read them)\n`);
  io.stderr(Buffer.from(output).subarray(Math.max(0, seen - from)).toString());
  return end;
}
