import { run, type Transport } from '../transport/index.js';
import { gatherScript } from './gather.js';
import { parseNodeState } from './parse.js';
import type { NodeState } from './types.js';

/** The node's whole state in one round trip. */
export async function readNodeState(transport: Transport, timeoutMs = 120_000): Promise<NodeState> {
  return parseNodeState(await run(transport, gatherScript(), { timeoutMs }));
}

export type * from './types.js';

/** The installed versions of these packages ('' where one is not installed, or not cleanly). */
export function versionsOf(state: NodeState, packages: string[]): Record<string, string> {
  return Object.fromEntries(packages.map((p) => [p, state.packages[p] ?? '']));
}
