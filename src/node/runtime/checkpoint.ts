import type { SandboxCheckpoint } from '../state/types.js';

// dockershim and cri-dockerd sandbox checkpoints: <root>/sandbox/<sandboxID>, JSON {version, name, namespace,
// data: {port_mappings, host_network}, checksum}. We read them; the checksum is not ours to verify.
export function parseCheckpoint(kind: SandboxCheckpoint['kind'], path: string, name: string, content: string | undefined, mtime: number): SandboxCheckpoint {
  let json: { name?: string; namespace?: string; data?: { host_network?: boolean } } = {};
  try {
    json = JSON.parse(content ?? '{}');
  } catch {
    // A corrupt checkpoint is still a checkpoint: it names a sandbox.
  }
  return {
    path,
    kind,
    sandboxId: name,
    podName: json.name,
    namespace: json.namespace,
    hostNetwork: json.data?.host_network === true,
    mtime,
  };
}
