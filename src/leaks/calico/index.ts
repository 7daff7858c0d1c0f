import { isNotFound, type Cluster } from '../../cluster/api.js';
import { isTerminal, podIps, podKey, slimPod } from '../../cluster/pods.js';
import { listAll } from '../../cluster/list.js';
import { servesGroup } from '../../cluster/groups.js';
import type { Node, Pod } from '../../cluster/types.js';
import { canonicalIp } from '../../node/cni/host-local.js';
import { detectCalicoLeaks } from './detect.js';
import type { BlockAffinity, CalicoFindings, CalicoView, IpamBlock, IpamHandle } from './types.js';

const GROUP = '/apis/crd.projectcalico.org/v1';

/** Whether the cluster serves Calico's CRD group. */
export const hasCalico = (cluster: Cluster) => servesGroup(cluster, GROUP);

/**
 * One read of Calico's IPAM CRDs, then the nodes and the pods, in pages; undefined when the cluster has no Calico CRDs.
 * The pods (a cluster-wide list: 100k pods are hundreds of MiB) only when there is a block (a pod's IP in a block,
 * even an empty one, may be a conflict), and after the blocks, so that a pod allocated between the two reads is in
 * the second.
 */
export async function readCalicoView(cluster: Cluster): Promise<CalicoView | undefined> {
  if (!(await hasCalico(cluster))) return undefined;
  try {
    const [affinities, blocks, handles] = await Promise.all([
      listAll<BlockAffinity>(cluster, `${GROUP}/blockaffinities`),
      listAll<IpamBlock>(cluster, `${GROUP}/ipamblocks`),
      listAll<IpamHandle>(cluster, `${GROUP}/ipamhandles`),
    ]);
    // The nodes, to find affinities of removed ones (and blocks of removed nodes), only where there is one of either.
    const nodes = affinities.length + blocks.length > 0 ? await listAll<Node>(cluster, '/api/v1/nodes') : [];
    const pods = blocks.length > 0 ? await listAll<Pod>(cluster, '/api/v1/pods', 500, slimPod) : [];
    const podIpMap = new Map<string, { pod: string; node: string }>();
    for (const p of pods) {
      if (isTerminal(p) || p.spec.hostNetwork || !p.spec.nodeName) continue;
      for (const ip of podIps(p)) podIpMap.set(canonicalIp(ip), { pod: podKey(p), node: p.spec.nodeName });
    }
    return {
      affinities,
      blocks,
      handles,
      nodes: new Set(nodes.map((n) => n.metadata.name)),
      podIps: podIpMap,
    };
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** Calico IPAM findings for a node and for the cluster, or none when the cluster has no Calico CRDs. */
export async function calicoFindings(cluster: Cluster, node: string): Promise<CalicoFindings> {
  const view = await readCalicoView(cluster);
  return view ? detectCalicoLeaks(view, node) : { node: [], cluster: [] };
}

export { detectCalicoLeaks };
