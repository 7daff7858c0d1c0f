import { detectFlavor } from '../runtime/flavor.js';
import type { CniCacheEntry, IpamDirectory, NodeState } from '../state/types.js';
import { configsByNetwork, detectNetwork } from './network-mode.js';
import { foreignNetns } from '../../leaks/detect/netns.js';

// A node may host CNI users besides kubelet's runtime: podman, a CI runner's containers, a VPN's namespace, each
// with networks, cache entries and host-local reservations of its own. node-maint tears down, clears and audits only
// kubelet's; the rest is left as it is and listed, so that a maintenance never cuts another user's network.

/** The runtimes attach every sandbox's loopback through libcni under these names: containerd's CRI, cri-dockerd's kubenet. */
const LOOPBACKS = ['cni-loopback', 'kubenet-loopback'];
/** go-cni's name for every user's loopback (containerd's CRI, BuildKit's CNI worker, nerdctl): its name says nothing of whose it is. */
const SHARED_LOOPBACK = 'cni-loopback';

/** The networks kubelet's runtime attaches pods to: kubenet, or the first CNI config (the one CRI runtimes use). */
export function kubeletNetworks(state: NodeState): Set<string> {
  const net = detectNetwork(state, detectFlavor(state));
  return new Set([net.networkName, ...LOOPBACKS].filter(Boolean));
}

const podArgs = (e: CniCacheEntry) => (e.cniArgs ?? []).some(([k]) => k === 'K8S_POD_NAME' || k === 'K8S_POD_NAMESPACE');

/**
 * Moves every CNI cache entry and host-local directory that is not Kubernetes' into `state.foreign`. Kubernetes'
 * are those of kubelet's networks, of a sandbox the runtime or a checkpoint knows, or made with the K8S_POD_*
 * arguments kubelet's runtimes pass; an entry of go-cni's shared loopback network is Kubernetes' only by its sandbox
 * or those arguments (a live build's loopback is BuildKit's). An entry that cannot tell (unreadable, or result-only
 * from a libcni before 0.8, which kept no arguments) stays Kubernetes' (audited, never skipped unseen) unless it names
 * another configured network.
 */
export function setAsideForeign(state: NodeState): void {
  const networks = kubeletNetworks(state);
  const others = new Set([...configsByNetwork(state).keys()].filter((n) => !networks.has(n)));
  const sandboxes = new Set([...state.sandboxes.map((s) => s.id), ...state.checkpoints.map((c) => c.sandboxId)]);
  const byName = (e: CniCacheEntry) => networks.has(e.networkName) && !(e.networkName === SHARED_LOOPBACK && e.format === 'cniCacheV1');
  const ours = (e: CniCacheEntry) => byName(e) || sandboxes.has(e.containerId) || podArgs(e) || (e.format !== 'cniCacheV1' && !others.has(e.networkName));
  const foreignCache = state.cniCache.filter((e) => !ours(e));
  const podNetworks = new Set(state.cniCache.filter(ours).map((e) => e.networkName));
  const ownsDir = (d: IpamDirectory) => networks.has(d.network) || podNetworks.has(d.network) || d.reservations.some((r) => sandboxes.has(r.containerId));
  const foreignIpam = state.ipam.filter((d) => !ownsDir(d));
  state.cniCache = state.cniCache.filter(ours);
  state.ipam = state.ipam.filter(ownsDir);
  state.foreign = { cniCache: foreignCache, ipam: foreignIpam };
}

/**
 * "left alone: 4 CNI cache entries and 1 host-local directory of networks that are not Kubernetes' (podnet)", and the
 * pinned network namespaces that are not (`mgmt`), or '' when there is none of either.
 */
export function leftAloneLine(state: NodeState): string {
  const { cniCache, ipam } = state.foreign;
  const pins = foreignNetns(state).sort();
  const names = [...new Set([...cniCache.map((e) => e.networkName), ...ipam.map((d) => d.network)])].sort();
  const parts = [
    ...(cniCache.length > 0 ? [`${cniCache.length} CNI cache entr${cniCache.length === 1 ? 'y' : 'ies'}`] : []),
    ...(ipam.length > 0 ? [`${ipam.length} host-local director${ipam.length === 1 ? 'y' : 'ies'} (${ipam.reduce((n, d) => n + d.reservations.length, 0)} reservation(s))`] : []),
  ];
  const lines = [
    ...(parts.length > 0 ? [`${parts.join(' and ')} of networks that are not Kubernetes' (${names.join(', ')})`] : []),
    ...(pins.length > 0 ? [`${pins.length} network namespace(s) not named as kubelet's runtime names its sandboxes' (${pins.join(', ')})`] : []),
  ];
  return lines.length > 0 ? `left alone: ${lines.join('; ')}` : '';
}
