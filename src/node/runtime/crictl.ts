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

/** crictl's sandboxes; undefined when the text is not crictl's list (cut off, an error): that is no answer. */
export function parseCrictlPods(json: string): Sandbox[] | undefined {
  const items = (safeParse(json) as { items?: CriPod[] }).items;
  if (!Array.isArray(items)) return undefined;
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

/** crictl's containers; undefined when the text is not crictl's list. */
export function parseCrictlContainers(json: string): RuntimeContainer[] | undefined {
  const items = (safeParse(json) as { containers?: CriContainer[] }).containers;
  if (!Array.isArray(items)) return undefined;
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
