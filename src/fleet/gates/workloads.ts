import { isNotFound, type Cluster } from '../../cluster/api.js';
import { isTerminal, listPodsOnNode } from '../../cluster/pods.js';
import type { ObjectMeta, Pod } from '../../cluster/types.js';

// The workloads that had pods on a node, and whether they are back: a wave is done only when every one of them is at
// its desired ready replicas again (or, if it was short before the node started, at least where it was then).
export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'ReplicaSet';

export interface WorkloadRef {
  kind: WorkloadKind;
  namespace: string;
  name: string;
}

/** A workload as its controller reports it: how many pods it wants, and how many are available. */
export interface WorkloadStatus extends WorkloadRef {
  desired: number;
  available: number;
  /** The controller has seen the workload's latest spec (status.observedGeneration). */
  observed: boolean;
}

/** What a workload must reach again after the node: its desired count, or what it had if it was short before. */
export interface WorkloadTarget extends WorkloadRef {
  need: number;
  desired: number;
}

export interface WorkloadObject {
  metadata: ObjectMeta & { generation?: number };
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    availableReplicas?: number;
    desiredNumberScheduled?: number;
    numberAvailable?: number;
  };
}

const API: Record<WorkloadKind, string> = { Deployment: 'deployments', StatefulSet: 'statefulsets', DaemonSet: 'daemonsets', ReplicaSet: 'replicasets' };
export const workloadName = (w: WorkloadRef) => `${w.kind} ${w.namespace}/${w.name}`;
const controllerOf = (meta: ObjectMeta) => meta.ownerReferences?.find((o) => o.controller);

/**
 * The workloads behind these pods, each once: a ReplicaSet stands for its Deployment when a Deployment controls it
 * (`replicaSetOwners` maps "namespace/name" of a ReplicaSet to its Deployment's name). Pods of no workload (bare
 * pods, static pods, Jobs) are not counted: nothing brings them back.
 */
export function workloadsOf(pods: Pod[], replicaSetOwners: Map<string, string | undefined>): WorkloadRef[] {
  const found = new Map<string, WorkloadRef>();
  for (const pod of pods) {
    const owner = controllerOf(pod.metadata);
    if (!owner || isTerminal(pod) || !(owner.kind in API)) continue;
    const namespace = pod.metadata.namespace ?? 'default';
    const deployment = owner.kind === 'ReplicaSet' ? replicaSetOwners.get(`${namespace}/${owner.name}`) : undefined;
    const ref: WorkloadRef = deployment ? { kind: 'Deployment', namespace, name: deployment } : { kind: owner.kind as WorkloadKind, namespace, name: owner.name };
    found.set(workloadName(ref), ref);
  }
  return [...found.values()].sort((a, b) => workloadName(a).localeCompare(workloadName(b)));
}

/** Desired and available pods as the workload's own controller counts them. */
export function statusOf(ref: WorkloadRef, object: WorkloadObject): WorkloadStatus {
  const s = object.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (object.metadata.generation ?? 0);
  if (ref.kind === 'DaemonSet') return { ...ref, desired: s.desiredNumberScheduled ?? 0, available: s.numberAvailable ?? 0, observed };
  return { ...ref, desired: object.spec?.replicas ?? 1, available: s.availableReplicas ?? 0, observed };
}

/** Each workload's bar after the node: never higher than it stood before (a workload short for reasons of its own does not hold the fleet forever). */
export function targetsOf(before: WorkloadStatus[]): WorkloadTarget[] {
  return before.map(({ kind, namespace, name, desired, available }) => ({ kind, namespace, name, desired, need: Math.min(desired, available) }));
}

/** What is not back yet, one line per workload; empty when all are. A workload deleted since counts as back. */
export function notBack(targets: WorkloadTarget[], now: Map<string, WorkloadStatus | undefined>): string[] {
  const lines: string[] = [];
  for (const t of targets) {
    const s = now.get(workloadName(t));
    if (!s) continue;
    // A scaled-down workload needs no more than it wants now.
    const need = Math.min(t.need, s.desired);
    if (!s.observed || s.available < need) lines.push(`${workloadName(t)} ${s.available}/${s.desired} available${need < s.desired ? ` (needs ${need}, as before the node)` : ''}${s.observed ? '' : ', spec not yet observed'}`);
  }
  return lines;
}

async function readWorkload(cluster: Cluster, ref: WorkloadRef): Promise<WorkloadObject | undefined> {
  try {
    return await cluster.get<WorkloadObject>(`/apis/apps/v1/namespaces/${encodeURIComponent(ref.namespace)}/${API[ref.kind]}/${encodeURIComponent(ref.name)}`);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** The workloads as they stand now; a workload that is gone maps to undefined. */
export async function readWorkloads(cluster: Cluster, refs: WorkloadRef[]): Promise<Map<string, WorkloadStatus | undefined>> {
  const objects = await Promise.all(refs.map((r) => readWorkload(cluster, r)));
  return new Map(refs.map((r, i) => [workloadName(r), objects[i] ? statusOf(r, objects[i]!) : undefined]));
}

/** The workloads with pods on the node now, with their status: what the gate after the node compares against. */
export async function workloadsOnNode(cluster: Cluster, node: string): Promise<WorkloadStatus[]> {
  const pods = await listPodsOnNode(cluster, node);
  const replicaSets = new Map<string, string | undefined>();
  for (const pod of pods) {
    const owner = controllerOf(pod.metadata);
    const key = `${pod.metadata.namespace}/${owner?.name}`;
    if (owner?.kind !== 'ReplicaSet' || replicaSets.has(key)) continue;
    const rs = await readWorkload(cluster, { kind: 'ReplicaSet', namespace: pod.metadata.namespace ?? 'default', name: owner.name });
    const deployment = rs && controllerOf(rs.metadata);
    replicaSets.set(key, deployment?.kind === 'Deployment' ? deployment.name : undefined);
  }
  const refs = workloadsOf(pods, replicaSets);
  const now = await readWorkloads(cluster, refs);
  return refs.flatMap((r) => now.get(workloadName(r)) ?? []);
}
