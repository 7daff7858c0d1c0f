import { podKey } from '../pods.js';
import type { Pod } from '../types.js';
import type { DrainPlanView } from './plan.js';

// A pod can still be bound to the node just after the cordon: the scheduler decides on its cache, which sees the
// cordon a moment later. kubectl drain lists once and leaves such a pod behind; we list again after each round and
// drain the late ones too, a bounded number of times.
export const MAX_DRAIN_ROUNDS = 5;

export interface DrainRounds {
  /** The node's pods as the drain sees them now. */
  plan(): Promise<DrainPlanView>;
  evict(pods: Pod[]): Promise<void>;
  waitGone(pods: Pod[]): Promise<void>;
  onLate(pods: Pod[], round: number): void;
}

/** Drains from a first plan until a fresh list finds nothing left to evict or wait for; returns the pods evicted. */
export async function drainInRounds(first: Pick<DrainPlanView, 'evict' | 'waitFor'>, deps: DrainRounds): Promise<Pod[]> {
  const evicted: Pod[] = [];
  let round = first;
  for (let n = 1; ; n++) {
    await deps.evict(round.evict);
    await deps.waitGone([...round.evict, ...round.waitFor]);
    evicted.push(...round.evict);
    const again = await deps.plan();
    if (again.refused) throw new Error(`a pod bound to the node after the cordon cannot be drained: ${again.refused}`);
    const late = [...again.evict, ...again.waitFor];
    if (late.length === 0) return evicted;
    if (n >= MAX_DRAIN_ROUNDS) throw new Error(`pods keep arriving on the cordoned node after ${n} rounds: ${late.map(podKey).join(', ')}`);
    deps.onLate(late, n + 1);
    round = again;
  }
}
