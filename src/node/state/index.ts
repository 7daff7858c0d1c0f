import { run, type Transport } from '../transport/index.js';
import { gatherScript } from './gather.js';
import { parseNodeState } from './parse.js';
import type { NodeState } from './types.js';

/** The node's whole state in one round trip. */
/** The node's state in one round trip; `packages`: dpkg's record of these too, beside the runtime's (a run's targets). */
export async function readNodeState(transport: Transport, timeoutMs = 120_000, packages: string[] = []): Promise<NodeState> {
  return parseNodeState(await run(transport, gatherScript(undefined, packages), { timeoutMs }));
}

export type * from './types.js';

