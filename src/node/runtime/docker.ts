import type { RuntimeContainer, Sandbox } from '../state/types.js';

// Parses `docker ps -a` lines of kubelet-managed containers (labels io.kubernetes.*): pod sandboxes are the pause
// containers (type podsandbox); the others point at their sandbox by io.kubernetes.sandbox.id.
export function parseDockerContainers(lines: string[], pids: Map<string, number>): { sandboxes: Sandbox[]; containers: RuntimeContainer[] } {
  const sandboxes: Sandbox[] = [];
  const containers: RuntimeContainer[] = [];
  for (const line of lines) {
    const [id, state, type, podUid = '', namespace = '', podName = '', sandboxId = '', name = '', createdAt = ''] = line.split('\t');
    if (!id) continue;
    if (type === 'podsandbox') {
      sandboxes.push({ id, ready: state === 'running', podUid, namespace, name: podName, pid: pids.get(id) ?? 0, createdAt });
    } else if (type === 'container') {
      containers.push({ id, sandboxId, state: dockerState(state), podUid, namespace, podName, name });
    }
  }
  return { sandboxes, containers };
}

function dockerState(state: string | undefined): RuntimeContainer['state'] {
  if (state === 'running' || state === 'created' || state === 'exited') return state;
  if (state === 'dead' || state === 'removing') return 'exited';
  return 'unknown';
}

export function parseDockerPids(lines: string[]): Map<string, number> {
  const pids = new Map<string, number>();
  for (const line of lines) {
    const [id, pid] = line.split('\t');
    if (id && pid) pids.set(id, Number(pid));
  }
  return pids;
}
