import type { NodeState } from '../../node/state/types.js';
import { ownerAlive, type Liveness } from '../liveness.js';
import type { Finding } from '../types.js';

// Leak class 2: libcni cache entries whose sandbox is gone: libcni deletes the entry only after a successful DEL.
export function detectCacheLeaks(state: NodeState, live: Liveness): Finding[] {
  return state.cniCache
    .filter((e) => !ownerAlive(live, e.containerId, e.ips[0]))
    .map((e) => ({
      class: 'cni-cache-orphan' as const,
      severity: 'leak' as const,
      message: `CNI cache entry ${e.networkName}/${e.ifName} of container ${e.containerId.slice(0, 12)} has no live sandbox${e.ips.length ? ` (held ${e.ips.join(', ')})` : ''}`,
      evidence: { file: e.path, containerId: e.containerId, ip: e.ips[0], network: e.networkName, format: e.format },
    }));
}
