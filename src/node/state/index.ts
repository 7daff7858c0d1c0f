import { run, type Transport } from '../transport/index.js';
import { gatherScript } from './gather.js';
import { parseNodeState } from './parse.js';
import type { NodeState } from './types.js';

/** The node's whole state in one round trip. */
export async function readNodeState(transport: Transport, timeoutMs = 120_000): Promise<NodeState> {
  return parseNodeState(await run(transport, gatherScript(), { timeoutMs }));
}

export type * from './types.js';

