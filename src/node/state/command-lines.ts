import type { NodeState } from './types.js';

// The flags kubelet and cri-dockerd really run with. kubeadm's unit says `kubelet $KUBELET_KUBEADM_ARGS ...`, whose
// values live in /var/lib/kubelet/kubeadm-flags.env (and /etc/default/kubelet), and newer kubelets take the runtime
// endpoint from their config file: the unit's ExecStart alone misses them, and the process is gone while stopped.

/** The value of --NAME in a command line (`--name=value` or `--name value`). */
export const flagValue = (cmdline: string, name: string) => new RegExp(`--${name}[= ](\\S+)`).exec(cmdline)?.[1];

/** kubelet's flags: its unit or process, the environment files' *_ARGS, and its config file's runtime fields. */
export function kubeletCommandLine(state: NodeState): string {
  return [state.services.kubelet?.execStart || state.processes.kubelet || '', ...state.kubeletFlags].join(' ').trim();
}

export function criDockerdCommandLine(state: NodeState): string {
  return state.services['cri-docker']?.execStart || state.processes['cri-dockerd'] || '';
}

/** `KUBELET_KUBEADM_ARGS="--a=b --c=d"` lines and `containerRuntimeEndpoint: x` config lines, as flags. */
export function parseKubeletFlags(envLines: string[], configLines: string[]): string[] {
  const fromEnv = envLines.flatMap((l) => {
    const m = /^\s*(?:export\s+)?[A-Z_]*ARGS=(.*)$/.exec(l);
    return m ? [m[1]!.trim().replace(/^(["'])(.*)\1$/, '$2')] : [];
  });
  const CONFIG_FLAGS: Record<string, string> = { containerRuntimeEndpoint: 'container-runtime-endpoint', podInfraContainerImage: 'pod-infra-container-image' };
  const fromConfig = configLines.flatMap((l) => {
    const m = /^(\w+):\s*["']?([^"'\s]+)["']?\s*$/.exec(l);
    return m && CONFIG_FLAGS[m[1]!] ? [`--${CONFIG_FLAGS[m[1]!]}=${m[2]}`] : [];
  });
  return [...fromEnv, ...fromConfig].filter(Boolean);
}
