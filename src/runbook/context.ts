import type { Cluster } from '../cluster/api.js';
import { detectNetwork, type NetworkInfo } from '../node/cni/network-mode.js';
import { detectFlavor } from '../node/runtime/flavor.js';
import { readInstalledVersions } from '../node/packages/index.js';
import { readNodeState } from '../node/state/index.js';
import type { NodeState } from '../node/state/types.js';
import { FencedTransport } from '../node/transport/fenced.js';
import type { Transport } from '../node/transport/types.js';
import type { EventSink } from './events.js';
import type { Journal } from './journal.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { RunOptions } from './options.js';
import type { RunContext } from './step.js';
import { throwIfStopped } from '../stop.js';

export interface ContextInput {
  options: RunOptions;
  cluster: Cluster;
  transport: Transport;
  journal: Journal;
  resuming: boolean;
  keeper: LeaseKeeper;
  emit: EventSink;
  /** The step progress lines belong to. */
  currentStep: () => string;
  /** An operator's stop: no change starts after it (the fence), waits give up. */
  stop: AbortSignal;
}

/**
 * What steps see: the cluster and the node behind the Lease's fence (no write, no command while the Lease is not
 * ours), the node's state read once and cached until a step asks afresh, and the journal.
 */
export function makeContext(input: ContextInput): RunContext {
  const { options, journal, keeper, emit } = input;
  let cached: NodeState | undefined;
  let network: NetworkInfo | undefined;
  // A fresh read right after one (one step's check, the next one's plan) with no command on the node between them
  // would read the same: it is taken from the last read, which is under a second old. State reads cost the node CPU.
  let readAt = 0;
  let commandSinceRead = true;
  const { stop } = input;
  // Changes wait for the Lease and start no more once a stop was asked; reads (the stop's own report) wait for the Lease only.
  const leaseFence = () => keeper.fence();
  const fence = () => {
    throwIfStopped(stop);
    return keeper.fence();
  };
  const progress = (message: string) => emit({ type: 'progress', step: input.currentStep(), message });
  const transport = new FencedTransport(input.transport, fence, { onCommand: () => (commandSinceRead = true), recordFor: options.dryRun ? undefined : journal.runId, stop });
  const reader = new FencedTransport(input.transport, leaseFence, { stop });
  const unchangedSinceRead = () => cached !== undefined && !commandSinceRead && Date.now() - readAt < 1_000;
  const ctx: RunContext = {
    options,
    runId: journal.runId,
    cluster: input.cluster.withHooks({ beforeWrite: fence, onRetry: progress, signal: stop }),
    recordingCluster: input.cluster.withHooks({ beforeWrite: leaseFence, onRetry: progress }),
    transport,
    reader,
    stop,
    journal,
    resuming: input.resuming,
    boot: {},
    planned: {},
    async nodeState(o = {}) {
      if (cached && (!o.fresh || unchangedSinceRead())) return cached;
      commandSinceRead = false;
      cached = await readNodeState(reader, options.commandTimeoutSeconds * 1000, Object.keys(options.targets));
      readAt = Date.now();
      return cached;
    },
    installedVersions: (packages) => readInstalledVersions(reader, packages),
    async network() {
      if (!network) {
        const state = await ctx.nodeState();
        network = detectNetwork(state, journal.prior?.flavor ?? detectFlavor(state));
      }
      return network;
    },
    progress,
    saveJournal: () => (options.dryRun ? Promise.resolve() : keeper.save(journal)),
  };
  return ctx;
}
