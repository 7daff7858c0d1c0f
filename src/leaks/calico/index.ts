import { isNotFound, type Cluster } from '../../cluster/api.js';
import { isTerminal, listPodsOnNode, podIps, podKey, slimPod } from '../../cluster/pods.js';
import { listAll } from '../../cluster/list.js';
import { servesGroup } from '../../cluster/groups.js';
import type { Node, Pod } from '../../cluster/types.js';
import { canonicalIp } from '../../node/cni/host-local.js';
import { allocatedPod, blockFinder } from './blocks.js';
import { blockObjectName, CALICO_GROUP } from './names.js';
import type { IpamScope } from '../types.js';
import { detectCalicoLeaks } from './detect.js';
import { affineNode, type BlockAffinity, type CalicoFindings, type CalicoView, type IpamBlock, type IpamHandle } from './types.js';

export { CALICO_GROUP };

/** Whether the cluster serves Calico's CRD group. */
export const hasCalico = (cluster: Cluster) => servesGroup(cluster, CALICO_GROUP);


/** Calico's IPAM view for this audit; undefined when the cluster has no Calico CRDs. */
export async function readCalicoView(cluster: Cluster, node: string, scope: IpamScope = 'node'): Promise<CalicoView | undefined> {
  if (!(await hasCalico(cluster))) return undefined;
  try {
    return scope === 'cluster' ? await readWholeView(cluster) : await readNodeView(cluster, node);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/**
 * What one node's audit needs, and nothing that grows with the cluster's pods: the block affinities (one small object
 * per block), the blocks affine to the node and those its pods' addresses lie in (by name), the node's pods, then the
 * pods its blocks name that run elsewhere (by name). Pods after the blocks, so a pod allocated between is in the second.
 */
async function readNodeView(cluster: Cluster, node: string): Promise<CalicoView> {
  const affinities = (await listAll<BlockAffinity>(cluster, `${CALICO_GROUP}/blockaffinities`)).filter((a) => String(a.spec.deleted) !== 'true');
  const blocks = new Map<string, IpamBlock>();
  const readBlock = async (cidr: string) => {
    const name = blockObjectName(cidr);
    if (blocks.has(name)) return;
    const block = await cluster.get<IpamBlock>(`${CALICO_GROUP}/ipamblocks/${name}`).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
    if (block) blocks.set(name, block);
  };
  await Promise.all(affinities.filter((a) => a.spec.node === node).map((a) => readBlock(a.spec.cidr)));
  const podsHere = (await listPodsOnNode(cluster, node)).filter(hasPodNetwork);
  // An address of this node's pod outside its own blocks lies in the block of whichever affinity covers it.
  const affinityOf = blockFinder(affinities);
  const elsewhere = podsHere.flatMap(podIps).map((ip) => affinityOf(ip)?.spec.cidr).filter((c): c is string => c !== undefined);
  await Promise.all([...new Set(elsewhere)].map(readBlock));
  const pods = new Map(podsHere.map((p) => [podKey(p), p]));
  const named = new Set<string>();
  for (const block of blocks.values()) {
    if (affineNode(block) !== node) continue;
    for (const index of block.spec.allocations) {
      const pod = index === null || index === undefined ? undefined : allocatedPod(block.spec.attributes[index] ?? {});
      if (pod && !pods.has(pod)) named.add(pod);
    }
  }
  await Promise.all(
    [...named].map(async (key) => {
      const [namespace, name] = key.split('/') as [string, string];
      const pod = await cluster.get<Pod>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
      if (pod && hasPodNetwork(pod)) pods.set(key, slimPod(pod));
    }),
  );
  // Which nodes exist: this one, and the owners of the blocks read (a conflict with a removed node's block says so).
  const owners = new Set([...blocks.values()].map(affineNode).filter((n): n is string => n !== undefined && n !== node));
  const nodes = new Set([node]);
  await Promise.all(
    [...owners].map(async (owner) => {
      const found = await cluster.get<Node>(`/api/v1/nodes/${encodeURIComponent(owner)}`).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
      if (found) nodes.add(owner);
    }),
  );
  return { blocks: [...blocks.values()], nodes, ...podViews([...pods.values()]) };
}

/**
 * The cluster's whole IPAM (affinities, blocks, handles), then the nodes and every pod, in pages: what `--cluster-wide`
 * asks for, to find what no one node owns. Pods only when there is a block, and after the blocks.
 */
async function readWholeView(cluster: Cluster): Promise<CalicoView> {
  const [affinities, blocks, handles] = await Promise.all([
    listAll<BlockAffinity>(cluster, `${CALICO_GROUP}/blockaffinities`),
    listAll<IpamBlock>(cluster, `${CALICO_GROUP}/ipamblocks`),
    listAll<IpamHandle>(cluster, `${CALICO_GROUP}/ipamhandles`),
  ]);
  const nodes = affinities.length + blocks.length > 0 ? await listAll<Node>(cluster, '/api/v1/nodes') : [];
  const pods = blocks.length > 0 ? await listAll<Pod>(cluster, '/api/v1/pods', 500, slimPod) : [];
  return { blocks, nodes: new Set(nodes.map((n) => n.metadata.name)), ...podViews(pods.filter(hasPodNetwork)), whole: { affinities, handles } };
}

const hasPodNetwork = (p: Pod) => !isTerminal(p) && !p.spec.hostNetwork && Boolean(p.spec.nodeName);

/** The addresses the pods hold, and the pods (not being deleted) that hold none yet. */
function podViews(pods: Pod[]): Pick<CalicoView, 'podIps' | 'waiting'> {
  const map: CalicoView['podIps'] = new Map();
  const waiting: NonNullable<CalicoView['waiting']> = new Map();
  for (const p of pods) {
    const ips = podIps(p);
    if (ips.length === 0 && !p.metadata.deletionTimestamp) waiting.set(podKey(p), p.spec.nodeName!);
    for (const ip of ips) map.set(canonicalIp(ip), { pod: podKey(p), node: p.spec.nodeName!, ...(p.metadata.deletionTimestamp ? { terminating: true } : {}) });
  }
  return { podIps: map, waiting };
}

/** Calico IPAM findings for a node (and, cluster-wide, for the cluster); undefined when the cluster has no Calico CRDs. */
export async function calicoFindings(cluster: Cluster, node: string, scope: IpamScope = 'node'): Promise<CalicoFindings | undefined> {
  const view = await readCalicoView(cluster, node, scope);
  return view && detectCalicoLeaks(view, node);
}

export { detectCalicoLeaks };
