import { ConfigError } from './config/values.js';

// The order nodes are maintained in, before they are cut into waves: the least disruptive first by default.
export type FleetOrder = 'fewest-pods' | 'as-listed' | { first: string[] };

/** Pods bound to each node, from one list of every pod (pods not yet scheduled count for none). */
export function podsPerNode(pods: Array<{ spec: { nodeName?: string } }>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of pods) if (p.spec.nodeName) counts.set(p.spec.nodeName, (counts.get(p.spec.nodeName) ?? 0) + 1);
  return counts;
}

/**
 * The fleet's names in maintenance order. `names` is the fleet as listed (config nodes, or name order for a selector);
 * an operator's list goes first as given, the rest after it fewest pods first, ties by name.
 */
export function orderFleet({ names, order, pods }: { names: string[]; order: FleetOrder; pods: Map<string, number> }): string[] {
  if (order === 'as-listed') return [...names];
  const first = order === 'fewest-pods' ? [] : order.first;
  const unknown = first.filter((n) => !names.includes(n));
  if (unknown.length > 0) throw new ConfigError('order', `not in the fleet: ${unknown.join(', ')} (the fleet: ${names.join(', ')})`);
  const count = (n: string) => pods.get(n) ?? 0;
  const rest = names.filter((n) => !first.includes(n)).sort((a, b) => count(a) - count(b) || a.localeCompare(b));
  return [...first, ...rest];
}

export function describeOrder(order: FleetOrder): string {
  return typeof order === 'string' ? order : `${order.first.join(', ')} first, then fewest-pods`;
}
