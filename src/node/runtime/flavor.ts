import { DAEMON_UNITS } from './binaries.js';
import { flagValue, kubeletCommandLine } from '../state/command-lines.js';
import type { NodeState, RuntimeFlavor } from '../state/types.js';

// Which runtime serves kubelet: the endpoint its flags or config name, else the units and daemons present.
export function detectFlavor(state: NodeState): RuntimeFlavor {
  const loaded = (u: string) => state.services[u]?.loaded === true;
  const kubelet = kubeletCommandLine(state);
  const endpoint = flagValue(kubelet, 'container-runtime-endpoint') ?? '';
  if (/cri-dockerd\.sock/.test(endpoint) && loaded('cri-docker')) return 'cri-dockerd';
  // A node moved from cri-dockerd to containerd may still have cri-docker installed: the endpoint decides.
  if (/containerd\.sock/.test(endpoint) && loaded('containerd')) return 'containerd';
  if (loaded('cri-docker') || state.processes['cri-dockerd']) return 'cri-dockerd';
  if (loaded('docker') && (/--container-runtime=docker\b/.test(kubelet) || state.checkpoints.some((c) => c.kind === 'dockershim'))) {
    return 'dockershim';
  }
  if (loaded('containerd')) return 'containerd';
  return 'unknown';
}

/** The runtime's units in start order; stopped in reverse. kubelet is handled on its own. */
export function runtimeUnits(flavor: RuntimeFlavor): string[] {
  switch (flavor) {
    case 'cri-dockerd':
      return ['containerd', 'docker', 'cri-docker'];
    case 'dockershim':
      return ['containerd', 'docker'];
    case 'containerd':
      return ['containerd'];
    default:
      return [];
  }
}

/**
 * The services an upgrade stops and starts again, in start order: the flavor's own, and the daemon of each target
 * package (docker.io on a containerd node that also runs dockerd for builds).
 */
export function servicesOfUpgrade(flavor: RuntimeFlavor, targets: string[]): string[] {
  const wanted = new Set([...runtimeUnits(flavor), ...targets.map((p) => DAEMON_UNITS[p]).filter((u): u is string => u !== undefined)]);
  return ['containerd', 'docker', 'cri-docker'].filter((u) => wanted.has(u));
}

