// Waves: never more than maxUnavailable nodes in maintenance at once. Each wave starts only when the whole wave
// before it succeeded, so a failed node stops every node after it.
export function planWaves<T>(nodes: T[], maxUnavailable: number): T[][] {
  if (!Number.isInteger(maxUnavailable) || maxUnavailable < 1) throw new Error(`maxUnavailable must be a whole number >= 1 (got ${maxUnavailable})`);
  const waves: T[][] = [];
  for (let i = 0; i < nodes.length; i += maxUnavailable) waves.push(nodes.slice(i, i + maxUnavailable));
  return waves;
}
