// Waves: never more than maxUnavailable nodes in maintenance at once. Each wave starts only when the whole wave
// before it succeeded, so a failed node stops every node after it.
export function planWaves<T>(nodes: T[], maxUnavailable: number): T[][] {
  if (!Number.isInteger(maxUnavailable) || maxUnavailable < 1) throw new Error(`maxUnavailable must be a whole number >= 1 (got ${maxUnavailable})`);
  const waves: T[][] = [];
  for (let i = 0; i < nodes.length; i += maxUnavailable) waves.push(nodes.slice(i, i + maxUnavailable));
  return waves;
}

/**
 * Workers first, in waves of maxUnavailable; control-plane nodes after them, one per wave, so two etcd members or
 * apiservers are never down together.
 */
export function planFleetWaves<T>(workers: T[], controlPlane: T[], maxUnavailable: number): T[][] {
  return [...planWaves(workers, maxUnavailable), ...controlPlane.map((n) => [n])];
}
