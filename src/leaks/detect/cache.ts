import type { NodeState } from '../../node/state/types.js';
import { mayBeInSetup, ownerAlive, type Liveness } from '../liveness.js';
import type { Finding } from '../types.js';

// Leak class 2: libcni cache entries whose sandbox is gone: libcni deletes the entry only after a successful DEL.
// One in setup (its ADD has not ended, so the runtime does not list it yet) is held back, by path.
export function detectCacheLeaks(state: NodeState, live: Liveness): { findings: Finding[]; inSetup: string[] } {
  const unowned = state.cniCache.filter((e) => !ownerAlive(live, e.containerId, e.ips[0]));
  const inSetup = unowned.filter((e) => mayBeInSetup(live, e));
  const findings = unowned
    .filter((e) => !inSetup.includes(e))
    .map((e) => ({
      class: 'cni-cache-orphan' as const,
      severity: 'leak' as const,
      message: `CNI cache entry ${e.networkName}/${e.ifName} of container ${e.containerId.slice(0, 12)} has no live sandbox${e.ips.length ? ` (held ${e.ips.join(', ')})` : ''}`,
      evidence: { file: e.path, containerId: e.containerId, ip: e.ips[0], network: e.networkName, format: e.format },
    }));
  return { findings, inSetup: inSetup.map((e) => e.path) };
}
