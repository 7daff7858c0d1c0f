import type { Cluster } from '../../../src/cluster/api.js';
import type { Transport } from '../../../src/node/transport/types.js';
import { makeContext } from '../../../src/runbook/context.js';
import type { EventSink } from '../../../src/runbook/events.js';
import type { Journal } from '../../../src/runbook/journal.js';
import type { LeaseKeeper } from '../../../src/runbook/lease-keeper.js';
import type { RunOptions } from '../../../src/runbook/options.js';
import { NEVER_STOPPED } from '../../../src/stop.js';

/** A run's context over this node, with an API that is never asked and a Lease always held (its journal kept in memory). */
export function contextOn(node: Transport, stop: AbortSignal = NEVER_STOPPED, more: { options?: Partial<RunOptions>; journal?: Partial<Journal>; emit?: EventSink } = {}) {
  const cluster = { withHooks: () => cluster } as unknown as Cluster;
  return makeContext({
    options: { commandTimeoutSeconds: 60, dryRun: false, targets: {}, ...more.options } as unknown as RunOptions,
    cluster,
    transport: node,
    journal: { runId: 'r1', ...more.journal } as Journal,
    resuming: false,
    keeper: { fence: async () => undefined, save: async () => undefined } as unknown as LeaseKeeper,
    emit: more.emit ?? (() => undefined),
    currentStep: () => 'test',
    stop,
  });
}
