import { isNotFound, type Cluster } from '../cluster/api.js';
import { ExitCode } from '../errors.js';
import type { RunSpec } from './spec.js';

// A MaintenanceRun (runbooks/agent/crd.yaml), as the API holds it: one per node, named for it. Its requester writes
// the spec (and maybe its stop, and that it read the report); the node's agent writes the status, and only the status.

export const RUN_GROUP = 'node-maint.io';
export const RUN_VERSION = 'v1alpha1';
export const RUN_RESOURCE = 'maintenanceruns';
export const runsPath = `/apis/${RUN_GROUP}/${RUN_VERSION}/${RUN_RESOURCE}`;
export const runPath = (node: string) => `${runsPath}/${encodeURIComponent(node)}`;
/** The agent's namespace (runbooks/agent/): its pods, its policy and the nodes' facts. */
export const AGENT_NAMESPACE = 'node-maint';
/** Set by a requester once it printed the ended run's report: the same ask again then starts a new run. */
export const DELIVERED_ANNOTATION = 'node-maint.io/delivered';

export type RunPhase = 'Refused' | 'Starting' | 'Running' | 'Succeeded' | 'Failed' | 'Stopped';
export const ENDED_PHASES: readonly RunPhase[] = ['Refused', 'Succeeded', 'Failed', 'Stopped'];

export interface RunStatus {
  phase?: RunPhase;
  /** The agent's name for the run (its unit, its files on the node), chosen when it claimed the run. */
  runId?: string;
  unit?: string;
  /** The node's boot the unit was last started on, and how many times it was (once per boot of the run). */
  boot?: string;
  starts?: number;
  /** The step the run is at, from its progress ("[ 4/12] Stop kubelet ..."). */
  step?: string;
  exitCode?: number;
  /** The agent's own word on the run: why it refused it, why it did not start it again. */
  message?: string;
  claimedAt?: string;
  startedAt?: string;
  endedAt?: string;
  seenAt?: string;
  stopSent?: boolean;
  unitRemoved?: boolean;
  output?: string;
  outputFrom?: number;
  read?: number;
  report?: string;
}

export interface MaintenanceRun {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; uid?: string; resourceVersion?: string; creationTimestamp?: string; annotations?: Record<string, string> };
  spec: RunSpec;
  status?: RunStatus;
}

export const isEnded = (run: MaintenanceRun | undefined) => !!run?.status?.phase && ENDED_PHASES.includes(run.status.phase);
/** Withdrawn by its requester before any agent claimed it: no run, and nothing will ever start it. */
export const isWithdrawn = (run: MaintenanceRun) => !!run.spec.stop && !run.status?.phase;

export function phaseOfExit(code: number): RunPhase {
  if (code === ExitCode.ok) return 'Succeeded';
  return code === ExitCode.stopped ? 'Stopped' : 'Failed';
}

export async function getRun(cluster: Cluster, node: string): Promise<MaintenanceRun | undefined> {
  return cluster.get<MaintenanceRun>(runPath(node)).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
}

export async function createRun(cluster: Cluster, spec: RunSpec): Promise<MaintenanceRun> {
  const body: MaintenanceRun = { apiVersion: `${RUN_GROUP}/${RUN_VERSION}`, kind: 'MaintenanceRun', metadata: { name: spec.nodeName }, spec };
  return cluster.request<MaintenanceRun>('POST', runsPath, body);
}

/** The ended run removed, only if it is still the one read (a run started meanwhile is never removed). */
export async function deleteRun(cluster: Cluster, run: MaintenanceRun): Promise<void> {
  await cluster.request('DELETE', runPath(run.metadata.name), { preconditions: { uid: run.metadata.uid, resourceVersion: run.metadata.resourceVersion } }).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
}

/** The agent's write of the status, only over the version it read (409 when the requester wrote meanwhile). */
export async function writeStatus(cluster: Cluster, run: MaintenanceRun, status: RunStatus): Promise<MaintenanceRun> {
  return cluster.request<MaintenanceRun>('PUT', `${runPath(run.metadata.name)}/status`, { ...run, status });
}

export async function askStop(cluster: Cluster, node: string, reason: string): Promise<void> {
  await cluster.mergePatch(runPath(node), { spec: { stop: { reason, at: new Date().toISOString() } } });
}

export async function markDelivered(cluster: Cluster, node: string): Promise<void> {
  await cluster.mergePatch(runPath(node), { metadata: { annotations: { [DELIVERED_ANNOTATION]: 'true' } } });
}

/** A status holds at most this much of the run's progress: its tail, with a count of what was dropped before it. */
export const OUTPUT_KEPT = 256 * 1024;
/** The run's report (its stdout) in a status: its tail. */
export const REPORT_KEPT = 512 * 1024;

/** The output with `more` appended, its head dropped past OUTPUT_KEPT. */
export function appendOutput(status: Pick<RunStatus, 'output' | 'outputFrom'>, more: string): Pick<RunStatus, 'output' | 'outputFrom'> {
  const all = (status.output ?? '') + more;
  const from = status.outputFrom ?? 0;
  const drop = Math.max(0, Buffer.byteLength(all) - OUTPUT_KEPT);
  if (drop === 0) return { output: all, outputFrom: from };
  const kept = Buffer.from(all).subarray(drop).toString();
  return { output: kept, outputFrom: from + Buffer.byteLength(all) - Buffer.byteLength(kept) };
}

/** The step the run last started among its progress lines ("[ 4/12] Stop kubelet ..."): the STEP column's "4/12 Stop kubelet". */
export function lastStep(lines: string, before?: string): string | undefined {
  const steps = lines.split('\n').map((l) => /^\[\s*(\d+\/\d+)\] (.*) \.\.\.$/.exec(l)).filter(Boolean);
  const last = steps.at(-1);
  return last ? `${last[1]} ${last[2]}`.slice(0, 200) : before;
}
