import { isTerminal, podIps, podKey } from '../../cluster/pods.js';
import type { Pod } from '../../cluster/types.js';
import { canonicalIp } from '../../node/cni/host-local.js';
import { ownerAlive, type Liveness } from '../liveness.js';
import type { Finding } from '../types.js';
import type { WhereaboutsAllocation, WhereaboutsView } from './types.js';

// whereabouts swallows every error of its DEL (the API unreachable, its leader election timed out): the sandbox goes,
// its allocation stays, and the address is never handed out again. Pure, over one read of the pools and the pods.
// An allocation is this node's when its pod is bound here; one whose pod is gone belongs to no node known any more, so
// it fails no node's audit: the cluster-wide audit (every pod's name) shows it, and its reclaim releases it.
export function detectWhereaboutsLeaks(view: WhereaboutsView, live: Liveness, podsOnNode: Pod[] | undefined): { node: Finding[]; cluster: Finding[]; cannotTell: string[] } {
  const here = new Map((podsOnNode ?? []).map((p) => [podKey(p), p]));
  const node: Finding[] = [];
  const cluster: Finding[] = [];
  const cannotTell: string[] = [];
  for (const a of view.allocations) {
    const held = live.sandboxIds.has(a.containerId) || live.attachedContainers.has(a.containerId);
    // Older whereabouts, and ADDs made without K8S_POD_* arguments, name no pod: only its container can say whose it
    // is, and only when it lives here; anywhere else it may be a live container of another node, never a leak of ours.
    if (!a.podRef) {
      if (!held) cannotTell.push(`${a.ip} (whereabouts pool ${a.namespace}/${a.pool}, container ${short(a.containerId)})`);
      continue;
    }
    const pod = here.get(a.podRef);
    if (pod) {
      // A pod with no IP yet may be in its ADD right now (its allocation is made before its sandbox is listed); a pod
      // that finished never is (kubelet clears a finished pod's IPs).
      const inFlight = !isTerminal(pod) && podIps(pod).length === 0 && !pod.metadata.deletionTimestamp;
      if (inFlight || ownerAlive(live, a.containerId, a.ip)) continue;
      node.push(leak(a, `${a.podRef}, bound here, whose sandbox is gone`));
    } else if (!podsOnNode || live.readySandboxIds.has(a.containerId) || live.attachedContainers.has(a.containerId)) {
      // A gone pod's sandbox left stopped here (kubelet removes it later) ran its DEL at its stop, which whereabouts
      // dropped: it holds the address no more. One that runs, or whose network namespace is still there, does.
      continue;
    } else if (view.pods && !view.pods.has(a.podRef)) {
      cluster.push(leak(a, `${a.podRef}, which no longer exists`));
    }
  }
  return { node, cluster, cannotTell };
}

const short = (id: string) => id.slice(0, 12) || '(empty)';

function leak(a: WhereaboutsAllocation, owner: string): Finding {
  return {
    class: 'whereabouts-ip-leaked',
    severity: 'leak',
    message: `${a.ip} in whereabouts pool ${a.namespace}/${a.pool} (${a.range}) is allocated to ${owner} (container ${short(a.containerId)})`,
    evidence: { ip: a.ip, pod: a.podRef, containerId: a.containerId, pool: a.pool, namespace: a.namespace, range: a.range, offset: a.offset, resourceVersion: a.resourceVersion },
  };
}

/** The allocation whereabouts made for this pod's IP, if a live sandbox on the node holds it: the smoke pod's proof. */
export function liveAllocation(view: WhereaboutsView, live: Liveness, podRef: string, ip: string): WhereaboutsAllocation | undefined {
  return view.allocations.find(
    (a) => a.podRef === podRef && canonicalIp(a.ip) === canonicalIp(ip) && (live.sandboxIds.has(a.containerId) || live.attachedContainers.has(a.containerId)),
  );
}
