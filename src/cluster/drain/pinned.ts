import { isNotFound, type Cluster } from '../api.js';
import type { ObjectMeta, Pod } from '../types.js';

// Pods that an eviction cannot move: their controller puts the replacement straight back on this node, cordoned or
// not. The drain evicts them round after round and then fails (tried: a Deployment with nodeName, five rounds, the
// node rolled back). Found in preflight instead, before the cordon, naming the controller.

/** Where each controller kind lives in the API. */
const CONTROLLERS: Record<string, string> = {
  ReplicaSet: '/apis/apps/v1/namespaces/NS/replicasets/NAME',
  StatefulSet: '/apis/apps/v1/namespaces/NS/statefulsets/NAME',
  ReplicationController: '/api/v1/namespaces/NS/replicationcontrollers/NAME',
  Job: '/apis/batch/v1/namespaces/NS/jobs/NAME',
};

interface Controller {
  kind: string;
  metadata: ObjectMeta;
  spec?: { template?: { spec?: { nodeName?: string } } };
}

const UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';

type Requirement = { key: string; operator: string; values?: string[] };
const onlyThisNode = (key: string, node: string) => (r: Requirement) => r.key === key && r.operator === 'In' && r.values?.length === 1 && r.values[0] === node;

/**
 * The pod may run on this node only, however it says so: a nodeSelector on its hostname, or a required node affinity
 * each of whose terms (ORed) pins it here, by the hostname label or by `metadata.name` (matchFields, as DaemonSet-like
 * controllers and some operators write it).
 */
export function selectsOnly(pod: Pod, node: string): boolean {
  if (pod.spec.nodeSelector?.['kubernetes.io/hostname'] === node) return true;
  const terms = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return terms.length > 0 && terms.every((t) => (t.matchExpressions ?? []).some(onlyThisNode('kubernetes.io/hostname', node)) || (t.matchFields ?? []).some(onlyThisNode('metadata.name', node)));
}

/** The pod tolerates the cordon's taint and may run on this node only: the scheduler puts its replacement back here. */
export function comesBackByScheduler(pod: Pod, node: string): boolean {
  const tolerates = (pod.spec.tolerations ?? []).some(
    (t) => (t.key === UNSCHEDULABLE || (t.key === undefined && t.operator === 'Exists')) && (t.effect === undefined || t.effect === '' || t.effect === 'NoSchedule'),
  );
  return tolerates && selectsOnly(pod, node);
}

const controllerRef = (meta: ObjectMeta) => meta.ownerReferences?.find((o) => o.controller);

/**
 * "Deployment ns/web (template nodeName n1)" for each controller that would put its evicted pods straight back on
 * `node`: a pod template with this node's nodeName (the scheduler never sees it), or pods that tolerate the cordon
 * and select only this node. DaemonSet pods are not evicted, so not asked about.
 */
export async function pinningControllers(cluster: Cluster, node: string, evicted: Pod[]): Promise<string[]> {
  const found = new Map<string, string>();
  const fetched = new Map<string, Promise<Controller | undefined>>();
  const get = (kind: string, namespace: string, name: string) => {
    const key = `${kind}/${namespace}/${name}`;
    if (!fetched.has(key)) {
      const path = CONTROLLERS[kind]!.replace('NS', encodeURIComponent(namespace)).replace('NAME', encodeURIComponent(name));
      fetched.set(key, cluster.get<Controller>(path).then((c) => ({ ...c, kind }), (e) => (isNotFound(e) ? undefined : Promise.reject(e))));
    }
    return fetched.get(key)!;
  };
  for (const pod of evicted) {
    const ref = controllerRef(pod.metadata);
    if (!ref || !CONTROLLERS[ref.kind]) continue;
    const namespace = pod.metadata.namespace ?? 'default';
    const controller = await get(ref.kind, namespace, ref.name);
    if (!controller) continue;
    // A ReplicaSet of a Deployment is named by its Deployment, which is what the operator changes.
    const top = controllerRef(controller.metadata);
    const name = top?.kind === 'Deployment' ? `Deployment ${namespace}/${top.name}` : `${ref.kind} ${namespace}/${ref.name}`;
    if (controller.spec?.template?.spec?.nodeName === node) found.set(name, `${name} (template nodeName ${node})`);
    else if (comesBackByScheduler(pod, node)) found.set(name, `${name} (tolerates the cordon and selects only ${node})`);
  }
  return [...found.values()];
}
