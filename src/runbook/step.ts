import type { Cluster } from '../cluster/api.js';
import type { NetworkInfo } from '../node/cni/network-mode.js';
import type { NodeState } from '../node/state/types.js';
import type { Transport } from '../node/transport/types.js';
import type { Journal } from './journal.js';
import type { RunOptions } from './options.js';

// The step contract: plan observes and decides (it never changes anything; the dry run is plan alone), apply acts on
// the plan, verify checks the outcome, rollback returns what apply changed to the journal's prior state.
export interface StepPlan {
  /** One line per change; empty means the step has nothing to do. */
  actions: string[];
  summary: string;
  /** What the dry run and the JSON report show: pods, sandboxes, files, packages. */
  detail?: Record<string, unknown>;
}

export interface Step<P extends StepPlan = StepPlan> {
  name: string;
  title: string;
  /** What a rollback does for this step, and why, in one line (the README's table is made of these). */
  undo: string;
  /** Runs apply even when the plan has no actions: a check such as the leak audit. */
  alwaysApply?: boolean;
  /** A boot undoes its effect (systemd starts kubelet, kubelet sets up sandboxes): done again on a boot the run did not ask. */
  undoneByBoot?: boolean;
  plan(ctx: RunContext): Promise<P>;
  apply(ctx: RunContext, plan: P): Promise<string | void>;
  verify(ctx: RunContext, plan: P): Promise<void>;
  /** Idempotent: it may run again after a rollback that was killed, and on a step that never got to act. */
  rollback?(ctx: RunContext): Promise<string | void>;
}

export interface RunContext {
  readonly options: RunOptions;
  readonly runId: string;
  /** The API for the run's work: every write fenced by the Lease, none once a stop was asked; its retries end at a stop. */
  readonly cluster: Cluster;
  /** The API for what the run records of itself (its marks, Events, what a stop reads of the Node): fenced by the Lease only, so it still works after a stop. */
  readonly recordingCluster: Cluster;
  /** The node, every command fenced by the Lease (none once stopped), and recorded on the node while it runs. */
  readonly transport: Transport;
  /** The node for reads: fenced by the Lease only, so a stopped run can still say what the node is like. */
  readonly reader: Transport;
  /** The operator's stop: waits pass it on, so that they give up at once. */
  readonly stop: AbortSignal;
  readonly journal: Journal;
  /** True when continuing a run a previous process left unfinished. */
  readonly resuming: boolean;
  /** The node's boot as this process last read it (at its start, after the run's reboot): recorded with each step done. */
  readonly boot: { now?: string };
  /** The plans of the steps before this one, in this run: a dry run reads them to plan as the real run would. */
  readonly planned: Partial<Record<string, StepPlan>>;
  /** The node's state: one round trip, cached until a step changes the node (fresh: true reads again). */
  nodeState(options?: { fresh?: boolean }): Promise<NodeState>;
  /** The cleanly installed version of each package ('' where none), read from dpkg now. */
  installedVersions(packages: string[]): Promise<Record<string, string>>;
  /** Runtime flavor and network, fixed at preflight. */
  network(): Promise<NetworkInfo>;
  /** A line of progress under the current step. */
  progress(message: string): void;
  saveJournal(): Promise<void>;
}

/** Whether an earlier step of this run changes (or, in a dry run, would change) something. */
export function earlierStepActs(ctx: RunContext, step: string): boolean {
  return (ctx.planned[step]?.actions.length ?? 0) > 0;
}
