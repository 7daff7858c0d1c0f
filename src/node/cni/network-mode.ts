import { criDockerdCommandLine, flagValue as flag, kubeletCommandLine } from '../state/command-lines.js';
import type { NetworkMode, NodeState, RuntimeFlavor } from '../state/types.js';

export interface NetworkInfo {
  mode: NetworkMode;
  /** The CNI network name, i.e. the host-local directory under /var/lib/cni/networks. */
  networkName: string;
  /** Where the plugin binaries are, for DEL replays. */
  binDir: string;
  /**
   * Who allocates pod IPs: the `ipam.type` of the network's config (host-local for kubenet), or "plugin NAME" when no
   * plugin of the chain has an ipam section (Cilium's and AWS's plugins allocate themselves); "" when unknown.
   */
  ipam: string;
}

/** The IPAMs whose allocations the proof before uncordon and the leak audit can read: host-local's files on the node,
 * whereabouts' IPPools and calico-ipam's blocks in the API (Calico's Kubernetes datastore). */
export const READABLE_IPAMS: readonly string[] = ['host-local', 'whereabouts', 'calico-ipam'];

type PluginConf = { type?: string; ipam?: { type?: string }; datastore_type?: string };

function ipamOf(plugins: PluginConf[]): string {
  const withIpam = plugins.find((p) => typeof p.ipam?.type === 'string');
  // Calico keeps its IPAM in the API only with the Kubernetes datastore; its plugin's default is etcd.
  if (withIpam?.ipam?.type === 'calico-ipam' && withIpam.datastore_type !== 'kubernetes') return 'calico-ipam (etcd datastore)';
  if (withIpam) return withIpam.ipam!.type!;
  return plugins[0]?.type ? `plugin ${plugins[0].type}` : '';
}

/** kubenet (cri-dockerd or dockershim flag), or the first CNI config in /etc/cni/net.d (Calico if it uses calico). */
export function detectNetwork(state: NodeState, flavor: RuntimeFlavor): NetworkInfo {
  const criDockerd = criDockerdCommandLine(state);
  const kubelet = kubeletCommandLine(state);
  const dockerSide = flavor === 'cri-dockerd' ? criDockerd : flavor === 'dockershim' ? kubelet : '';
  const binDir = flag(dockerSide, 'cni-bin-dir') ?? state.cniBinDirs[0] ?? '/opt/cni/bin';
  if (flag(dockerSide, 'network-plugin') === 'kubenet') return { mode: 'kubenet', networkName: 'kubenet', binDir, ipam: 'host-local' };
  const conf = [...state.cniConfFiles]
    .filter((f) => /\.(conf|conflist|json)$/.test(f.name))
    .sort((a, b) => a.name.localeCompare(b.name))[0];
  if (!conf?.content) return { mode: 'unknown', networkName: '', binDir, ipam: '' };
  try {
    const json = JSON.parse(conf.content) as PluginConf & { name?: string; plugins?: PluginConf[] };
    const plugins = json.plugins ?? [json];
    const types = plugins.map((p) => p.type);
    return { mode: types.includes('calico') ? 'calico' : 'cni', networkName: json.name ?? '', binDir, ipam: ipamOf(plugins) };
  } catch {
    return { mode: 'unknown', networkName: '', binDir, ipam: '' };
  }
}

/**
 * Why the run cannot prove the node with this network (its IPAM unreadable and the full proof asked for), or
 * undefined. Said before anything changes: found only at the proof, it cost a drain, an upgrade and a rollback.
 */
export function ipamRefusal(node: string, net: NetworkInfo, proof: 'ipam' | 'network-only'): string | undefined {
  if (proof === 'network-only' || net.mode === 'unknown' || READABLE_IPAMS.includes(net.ipam)) return undefined;
  const who = net.ipam.startsWith('plugin ') ? `the ${net.ipam.slice(7)} plugin itself (no ipam section)` : net.ipam ? `the ${net.ipam} IPAM` : 'an IPAM it does not name';
  return (
    `${node}'s CNI network ${net.networkName || '(unnamed)'} allocates pod IPs with ${who}, which node-maint cannot read (it reads ${READABLE_IPAMS.join(', ')}): ` +
    'the proof before uncordon (the smoke pod\'s IP held by a live sandbox) and the IP leak audit could not pass; give --proof network-only to maintain it ' +
    'with the weaker proof (the smoke pod must get an IP and become Ready; the IPAM is not checked)'
  );
}

/** The network configs on the node by name, for result-only cache entries of a CNI (not kubenet) network. */
export function configsByNetwork(state: NodeState): Map<string, string> {
  const map = new Map<string, string>();
  for (const f of state.cniConfFiles) {
    try {
      const name = (JSON.parse(f.content ?? '') as { name?: string }).name;
      if (name && f.content) map.set(name, f.content);
    } catch {
      // not a network config
    }
  }
  return map;
}
