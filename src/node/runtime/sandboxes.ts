import { command, quote } from '../transport/quote.js';
import type { RuntimeFlavor, Sandbox, RuntimeContainer } from '../state/types.js';

// Stopping and removing pod sandboxes and their containers, per runtime, in one script for all of them.
export function removeSandboxesScript(flavor: RuntimeFlavor, sandboxes: Sandbox[], containers: RuntimeContainer[]): string {
  if (sandboxes.length === 0 && containers.length === 0) return 'true';
  if (flavor === 'containerd') {
    const ids = sandboxes.map((s) => command(s.id)).join(' ');
    return `set +e\nfor id in ${ids}; do crictl --timeout 5m stopp "$id" >/dev/null && crictl --timeout 5m rmp -f "$id" >/dev/null || echo "fail $id"; done`;
  }
  // Docker-based (cri-dockerd, dockershim): the workload containers first, then the pause containers.
  const ids = [...containers.map((c) => c.id), ...sandboxes.map((s) => s.id)].map((p) => quote(p));
  return `set +e\nfor id in ${ids.join(' ')}; do docker rm -f "$id" >/dev/null 2>&1 || { docker inspect "$id" >/dev/null 2>&1 && echo "fail $id"; }; done`;
}

export function failedRemovals(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('fail '))
    .map((l) => l.slice(5).trim());
}
