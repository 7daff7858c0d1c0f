import { criDockerdCommandLine, flagValue as flag, kubeletCommandLine } from '../state/command-lines.js';
import type { NetworkMode, NodeState, RuntimeFlavor } from '../state/types.js';

export interface NetworkInfo {
  mode: NetworkMode;
  /** The CNI network name, i.e. the host-local directory under /var/lib/cni/networks. */
  networkName: string;
  /** Where the plugin binaries are, for DEL replays. */
  binDir: string;
}

/** kubenet (cri-dockerd or dockershim flag), or the first CNI config in /etc/cni/net.d (Calico if it uses calico). */
export function detectNetwork(state: NodeState, flavor: RuntimeFlavor): NetworkInfo {
  const criDockerd = criDockerdCommandLine(state);
  const kubelet = kubeletCommandLine(state);
  const dockerSide = flavor === 'cri-dockerd' ? criDockerd : flavor === 'dockershim' ? kubelet : '';
  const binDir = flag(dockerSide, 'cni-bin-dir') ?? state.cniBinDirs[0] ?? '/opt/cni/bin';
  if (flag(dockerSide, 'network-plugin') === 'kubenet') return { mode: 'kubenet', networkName: 'kubenet', binDir };
  const conf = [...state.cniConfFiles]
    .filter((f) => /\.(conf|conflist|json)$/.test(f.name))
    .sort((a, b) => a.name.localeCompare(b.name))[0];
  if (!conf?.content) return { mode: 'unknown', networkName: '', binDir };
  try {
    const json = JSON.parse(conf.content) as { name?: string; type?: string; plugins?: Array<{ type?: string }> };
    const types = json.plugins?.map((p) => p.type) ?? [json.type];
    return { mode: types.includes('calico') ? 'calico' : 'cni', networkName: json.name ?? '', binDir };
  } catch {
    return { mode: 'unknown', networkName: '', binDir };
  }
}
