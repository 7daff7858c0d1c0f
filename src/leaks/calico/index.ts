import { ApiError, type Cluster } from '../../cluster/api.js';
import { isTerminal, podIps, podKey } from '../../cluster/pods.js';
import type { List, Node, Pod } from '../../cluster/types.js';
import { canonicalIp } from '../../node/cni/host-local.js';
import { detectCalicoLeaks } from './detect.js';
import type { BlockAffinity, CalicoFindings, CalicoView, IpamBlock, IpamHandle } from './types.js';

const GROUP = '/apis/crd.projectcalico.org/v1';

/** One read of Calico's IPAM CRDs, the nodes and the pods; undefined when the cluster has no Calico CRDs. */
export async function readCalicoView(cluster: Cluster): Promise<CalicoView | undefined> {
  try {
    const [affinities, blocks, handles, nodes, pods] = await Promise.all([
      cluster.get<List<BlockAffinity>>(`${GROUP}/blockaffinities`),
      cluster.get<List<IpamBlock>>(`${GROUP}/ipamblocks`),
      cluster.get<List<IpamHandle>>(`${GROUP}/ipamhandles`),
      cluster.get<List<Node>>('/api/v1/nodes'),
      cluster.get<List<Pod>>('/api/v1/pods'),
    ]);
    const podIpMap = new Map<string, { pod: string; node: string }>();
    for (const p of pods.items) {
      if (isTerminal(p) || p.spec.hostNetwork || !p.spec.nodeName) continue;
      for (const ip of podIps(p)) podIpMap.set(canonicalIp(ip), { pod: podKey(p), node: p.spec.nodeName });
    }
    return {
      affinities: affinities.items,
      blocks: blocks.items,
      handles: handles.items,
      nodes: new Set(nodes.items.map((n) => n.metadata.name)),
      podIps: podIpMap,
    };
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return undefined;
    throw e;
  }
}

/** Calico IPAM findings for a node and for the cluster, or none when the cluster has no Calico CRDs. */
export async function calicoFindings(cluster: Cluster, node: string): Promise<CalicoFindings> {
  const view = await readCalicoView(cluster);
  return view ? detectCalicoLeaks(view, node) : { node: [], cluster: [] };
}

export { detectCalicoLeaks };
