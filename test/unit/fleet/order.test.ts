import { describe, expect, it } from 'vitest';
import { orderFleet, podsPerNode } from '../../../src/fleet/order.js';
import { planFleetWaves } from '../../../src/fleet/waves.js';

const bound = (counts: Record<string, number>) => Object.entries(counts).flatMap(([nodeName, n]) => Array.from({ length: n }, () => ({ spec: { nodeName } })));
const names = ['w-c', 'w-a', 'w-b', 'w-d', 'cp-1', 'cp-2'];
// cp-2 has fewer pods than cp-1; w-a and w-b tie.
const pods = podsPerNode([...bound({ 'w-a': 3, 'w-b': 3, 'w-c': 7, 'cp-1': 9, 'cp-2': 4 }), { spec: {} }]);

describe('fleet order', () => {
  it('counts the pods bound to each node, unscheduled pods for none', () => {
    expect(Object.fromEntries(pods)).toEqual({ 'w-a': 3, 'w-b': 3, 'w-c': 7, 'cp-1': 9, 'cp-2': 4 });
  });

  it('fewest-pods: fewest first, ties and empty nodes by name', () => {
    expect(orderFleet({ names, order: 'fewest-pods', pods })).toEqual(['w-d', 'w-a', 'w-b', 'cp-2', 'w-c', 'cp-1']);
  });

  it('as-listed: the order of nodes', () => {
    expect(orderFleet({ names, order: 'as-listed', pods })).toEqual(names);
  });

  it('an operator list goes first as given, the rest after it fewest pods first', () => {
    expect(orderFleet({ names, order: { first: ['w-c', 'cp-1', 'w-b'] }, pods })).toEqual(['w-c', 'cp-1', 'w-b', 'w-d', 'w-a', 'cp-2']);
  });

  it('refuses names that are not in the fleet, naming the key', () => {
    expect(() => orderFleet({ names, order: { first: ['w-a', 'ghost'] }, pods })).toThrow(/^config node-maint:order: not in the fleet: ghost \(the fleet: w-c, w-a/);
  });

  it('keeps control-plane nodes last, one per wave, in the same order among themselves', () => {
    const controlPlane = new Set(['cp-1', 'cp-2']);
    const waves = (order: Parameters<typeof orderFleet>[0]['order']) => {
      const ordered = orderFleet({ names, order, pods });
      return planFleetWaves(ordered.filter((n) => !controlPlane.has(n)), ordered.filter((n) => controlPlane.has(n)), 2);
    };
    expect(waves({ first: ['cp-1', 'w-c'] })).toEqual([['w-c', 'w-d'], ['w-a', 'w-b'], ['cp-1'], ['cp-2']]);
    expect(waves('fewest-pods')).toEqual([['w-d', 'w-a'], ['w-b', 'w-c'], ['cp-2'], ['cp-1']]);
  });
});
