import type { RuntimeContainer, Sandbox } from '../state/types.js';

// `crictl pods -o json` and `crictl ps -a -o json`, for CRI runtimes other than cri-dockerd (containerd).
interface CriPod {
  id: string;
  state: string;
  createdAt?: string;
  metadata?: { name?: string; uid?: string; namespace?: string };
}
interface CriContainer {
  id: string;
  podSandboxId: string;
  state: string;
  metadata?: { name?: string };
  labels?: Record<string, string>;
}

export function parseCrictlPods(json: string): Sandbox[] {
  const items = (safeParse(json) as { items?: CriPod[] }).items ?? [];
  return items.map((p) => ({
    id: p.id,
    ready: p.state === 'SANDBOX_READY',
    podUid: p.metadata?.uid ?? '',
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    pid: 0,
    createdAt: p.createdAt ?? '',
  }));
}

export function parseCrictlContainers(json: string): RuntimeContainer[] {
  const items = (safeParse(json) as { containers?: CriContainer[] }).containers ?? [];
  return items.map((c) => ({
    id: c.id,
    sandboxId: c.podSandboxId,
    state: criState(c.state),
    podUid: c.labels?.['io.kubernetes.pod.uid'] ?? '',
    namespace: c.labels?.['io.kubernetes.pod.namespace'] ?? '',
    podName: c.labels?.['io.kubernetes.pod.name'] ?? '',
    name: c.metadata?.name ?? '',
  }));
}

function criState(state: string): RuntimeContainer['state'] {
  switch (state) {
    case 'CONTAINER_RUNNING':
      return 'running';
    case 'CONTAINER_CREATED':
      return 'created';
    case 'CONTAINER_EXITED':
      return 'exited';
    default:
      return 'unknown';
  }
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}
