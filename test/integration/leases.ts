// What this test process holds of the pool (pool.ts takes and frees it), for the checks that an action reaching past a
// file's own nodes runs only under the leases that keep other files out of its way.

/** The release of each lease this process holds, by name (a node or `resource:...`). */
export const held = new Map<string, () => Promise<void>>();

/**
 * The cluster's Calico and whereabouts IPAM: a `--reclaim --cluster-wide` releases every leak of either, whichever
 * file left it there for its own audit to find. A file or case that runs one, or leaves such a leak, holds both.
 */
export const CLUSTER_IPAM = ['resource:calico', 'resource:whereabouts'] as const;

/** Throws unless this process holds all of `names` (checked per process: a file's concurrent cases share it). */
export function assertHeld(names: readonly string[], action: string): void {
  const missing = names.filter((n) => !held.has(n));
  if (missing.length === 0) return;
  throw new Error(`${action} without ${missing.join(', ')}: it would release what other files hold there (lease CLUSTER_IPAM)`);
}
