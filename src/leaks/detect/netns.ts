import type { NodeState } from '../../node/state/types.js';
import type { Finding } from '../types.js';

// Leak class 7: pinned network namespaces that no sandbox and no CNI cache entry refers to.
export function detectNetnsLeaks(state: NodeState): Finding[] {
  if (!state.runtimeReachable) return [];
  const referenced = new Set(state.cniCache.map((e) => e.netns?.split('/').pop()).filter(Boolean));
  return state.netns
    .filter((name) => !referenced.has(name))
    .map((name) => ({
      class: 'netns-orphan' as const,
      severity: 'leak' as const,
      message: `network namespace ${name} belongs to no sandbox and no CNI attachment`,
      evidence: { file: `/var/run/netns/${name}` },
    }));
}
