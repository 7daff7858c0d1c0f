import * as fleet from './apply.js';
import type { NodeBefore } from './gates/index.js';
import { ExitCode, RunbookError } from '../errors.js';
import { FleetRuns } from './fleet-run.js';
import { nodeFailure, postMessage, type FleetMessage, type LaterNodes, type NodeOutcome } from './notify.js';
import type { RunReport } from '../runbook/report.js';
import { HELD_RESULT, SKIPPED_RESULT, undrainableReason } from './undrainable.js';
import { providerProcess } from './provider-process.js';
import { NEVER_STOPPED, stopReason } from '../stop.js';

// What the dynamic provider does, loaded in the provider's process (provider.ts is the serialized shim that loads it):
// check and diff are pure, so `pulumi preview` changes nothing; diff looks only at the node, its targets and its
// versions, so a changed window, order or gate never makes a node that is done show a change. create and update run
// the node between its gates.
export type ProviderInputs = fleet.NodeUpgradeInputs & {
  /** Installed versions the program saw when it planned; drift from the targets is a change. */
  observed?: Record<string, string>;
  sshKey?: string;
  /** A Pulumi secret, like the SSH key: Slack-style URLs carry a token. */
  webhook?: string;
  /** The nodes of the waves after this node's, named in the fleet's failure if this wave fails. */
  later?: LaterNodes;
  /** The unfinished run a killed `pulumi up` left on the node ("run R, running"): it is a change, whatever the versions. */
  unfinished?: string;
  /** The wave it runs in (0 first), kept in its outputs: the waves it ran in, not a plan that changes with pod counts. */
  wave?: number;
  /** Why this `pulumi up` reboots the node (reboot: always, or if-required and the node says so): a change. */
  rebootWanted?: string;
  /** Why only the node's run can tell whether it needs a reboot (its agent's facts may be old): a change. */
  rebootUnknown?: string;
};

/** The side effects of a node's run, one seam for tests. */
export interface NodeRunDeps {
  fleetHolds(inputs: fleet.NodeUpgradeInputs, now: Date): Promise<string[]>;
  beforeFleetNode(inputs: fleet.NodeUpgradeInputs, log: (line: string) => void, options?: { alerts: boolean; maintaining?: string[]; signal?: AbortSignal }): Promise<NodeBefore>;
  unfinishedRun(inputs: fleet.NodeUpgradeInputs): Promise<string | undefined>;
  upgradeFleetNode(inputs: fleet.NodeUpgradeInputs, sshKey: string | undefined, log: (line: string) => void, stop?: AbortSignal): Promise<RunReport>;
  markSkipped(inputs: fleet.NodeUpgradeInputs, runId: string | undefined, reason: string, log: (line: string) => void): Promise<void>;
  afterFleetNode(inputs: fleet.NodeUpgradeInputs, before: NodeBefore, log: (line: string) => void, signal?: AbortSignal): Promise<void>;
  notifyNodeEnd(webhook: string | undefined, inputs: fleet.NodeUpgradeInputs, outcome: NodeOutcome, log: (line: string) => void): Promise<void>;
  notifyFleet(webhook: string | undefined, message: FleetMessage, log: (line: string) => void): Promise<void>;
  clearWaitingTaints(inputs: fleet.NodeUpgradeInputs, which: 'own' | 'fleet'): Promise<void>;
  waitForBlockingPods(inputs: fleet.NodeUpgradeInputs, log: (line: string) => void, signal?: AbortSignal): Promise<void>;
}

const REAL: NodeRunDeps = { ...fleet, notifyFleet: postMessage };
const FLEET_RUNS = new FleetRuns();

export interface RunNodeOptions {
  deps?: NodeRunDeps;
  log?: (line: string) => void;
  runs?: FleetRuns;
  /** The provider process's stop (a cancelled `pulumi up`, its `pulumi` gone): no node starts after it, one under way stops. */
  stop?: AbortSignal;
}

/** The outputs of a node left as it was, passed by (skipped) or held: no run began. */
const passedBy = (inputs: ProviderInputs, why: { result: string; skipped?: string; held?: string }) => ({
  node: inputs.node,
  targets: inputs.targets,
  wave: inputs.wave ?? null,
  skipped: null,
  held: null,
  ...why,
  runId: null,
  versionsBefore: {},
  versionsAfter: {},
  steps: [],
  audit: null,
  durationMs: 0,
  providerMs: 0,
});

/** One node: the window and the pause, the alerts, the runbook, then the node and its workloads back. Throws to stop the fleet. */
export async function runNode(inputs: ProviderInputs, { deps = REAL, log = (line) => console.error(line), runs = FLEET_RUNS, stop: cancel = NEVER_STOPPED }: RunNodeOptions = {}) {
  const { sshKey, observed, webhook, later, unfinished: _, wave: __, rebootWanted: ___, rebootUnknown: ____, ...rest } = inputs;
  void observed;
  const fleetName = rest.fleet ?? 'fleet';
  runs.started(fleetName, inputs.node);
  // Every end of the node is told once: the node's message, then the fleet's failure if this was the last node running.
  const tell = async (outcome: Omit<NodeOutcome, 'node'>) => {
    await deps.notifyNodeEnd(webhook, rest, { node: inputs.node, ...outcome }, log);
    const { result, error, exitCode } = outcome;
    const end = result === SKIPPED_RESULT || result === HELD_RESULT ? { result, reason: error } : { result, ...(error !== undefined ? { error, ...(exitCode !== undefined ? { exitCode } : {}) } : {}) };
    const fleetFailed = runs.ended(fleetName, inputs.node, end, later ?? { names: [], count: 0 });
    // Its own waiting taint goes as its run ends; a failed fleet's waiting nodes wait no more: theirs go too.
    const which = fleetFailed ? 'fleet' : 'own';
    if (rest.waitingTaint) await deps.clearWaitingTaints(rest, which).catch((e: Error) => log(`[${inputs.node}] could not take the waiting taint off ${which === 'own' ? 'the node' : "the fleet's nodes"}: ${e.message}`));
    if (fleetFailed) await deps.notifyFleet(webhook, fleetFailed, (line) => log(`[${inputs.node}] ${line}`));
  };
  const stop = async (outcome: Omit<NodeOutcome, 'node'> & { error: string }): Promise<never> => {
    await tell(outcome);
    throw new Error(nodeFailure({ node: inputs.node, ...outcome }));
  };
  // Whatever a gate failed with once the fleet was cancelled, the node did not start because of the cancel.
  const notStarted = (e: Error) => stop({ result: 'not-started', error: cancel.aborted ? `cancelled by ${stopReason(cancel)}` : e.message });
  if (cancel.aborted) await notStarted(new Error('cancelled'));
  // A node a killed `pulumi up` left half-done is out of service already (cordoned, maybe its runtime stopped): it is
  // finished first, whatever the window, the pause and the alerts say (an alert may well be about this very node).
  const unfinished = await deps.unfinishedRun(rest).catch((e: Error) => stop({ result: 'not-started', error: `could not read the node's Lease: ${e.message}` }));
  if (unfinished) {
    log(`[${inputs.node}] finishing the unfinished ${unfinished} first: the window, the pause and the alerts are not asked for a node already out of service`);
  } else {
    // Checked as each node starts, not once per `pulumi up`: a pause, a closing window or a firing alert stops the
    // waves after it.
    const holds = await deps.fleetHolds(rest, new Date()).catch((e: Error) => stop({ result: 'not-started', error: `could not check the window and the pause: ${e.message}` }));
    // A closed window or a pause is a hold, not a failure: the node is left as it was, the up ends well, the next does it.
    if (holds.length > 0) {
      const why = holds.join('; ');
      log(`[${inputs.node}] held, not started: ${why}`);
      await tell({ result: HELD_RESULT, error: why });
      return passedBy(inputs, { result: HELD_RESULT, held: why });
    }
  }
  const maintaining = runs.running(fleetName).filter((n) => n !== inputs.node);
  const before = await deps.beforeFleetNode(rest, log, { alerts: !unfinished, maintaining, signal: cancel }).catch(notStarted);
  if (cancel.aborted) await notStarted(new Error('cancelled'));
  // A blocking pod (a backup, a batch job) holds the node; past the wait the node is undrainable: passed by or the fleet stops.
  const blocked = unfinished ? undefined : await deps.waitForBlockingPods(rest, log, cancel).then(() => undefined, (e: Error) => (cancel.aborted ? notStarted(e) : e.message));
  if (blocked !== undefined && inputs.undrainable !== 'skip') await stop({ result: 'not-started', error: blocked });
  if (blocked !== undefined) {
    // Marked as an undrainable node the runbook passed by is (label, annotation, Event), though no run began.
    await deps.markSkipped(rest, undefined, blocked, log).catch((e: Error) => stop({ result: 'not-started', error: `held by a blocking pod, and could not be marked skipped: ${e.message}` }));
    log(`[${inputs.node}] skipped (undrainable, left as it was): ${blocked}`);
    await tell({ result: SKIPPED_RESULT, error: blocked });
    return passedBy(inputs, { result: SKIPPED_RESULT, skipped: blocked });
  }
  const started = Date.now();
  // A node that cannot be reached (its transport) fails with its exit code, as the runbook's own failures do.
  const report = await deps.upgradeFleetNode(rest, sshKey, log, cancel).catch((e: Error) => stop({ result: 'failed', error: e.message, exitCode: e instanceof RunbookError ? ExitCode[e.code] : ExitCode.internal }));
  // An undrainable node, left as it was, is passed by when the operator said so; every other failure stops the fleet.
  const undrainable = report.exitCode !== 0 && inputs.undrainable === 'skip' ? undrainableReason(report) : undefined;
  if (undrainable !== undefined) {
    await deps.markSkipped(rest, report.runId, undrainable, log).catch((e: Error) => stop({ result: 'failed', error: `undrainable, and could not be marked skipped: ${e.message}`, runId: report.runId }));
    log(`[${inputs.node}] skipped (undrainable, left as it was): ${undrainable}`);
  } else if (report.exitCode !== 0) {
    const rolled = report.rollback.map((r) => `${r.step} ${r.status}`).join(', ');
    await stop({ result: report.result, error: `${report.error?.message ?? ''}${rolled ? `; rollback: ${rolled}` : ''}`, exitCode: report.exitCode, runId: report.runId });
  }
  // Whatever the run did to the node, the next wave waits until it and its workloads are back; a run that found
  // nothing to do changed nothing, so nothing soaks.
  if (report.result === 'nothing-to-do') log(`[${inputs.node}] nothing to do: its run read the node and found it at its targets${inputs.reboot?.policy === 'if-required' ? ', no reboot required' : ''}`);
  const after = report.result === 'nothing-to-do' ? { ...rest, soakSeconds: 0 } : rest;
  await deps.afterFleetNode(after, before, log, cancel).catch((e: Error) =>
    stop({ result: 'gate-failed', error: cancel.aborted ? `${report.result}, then cancelled by ${stopReason(cancel)} before it and its workloads were seen back` : e.message, runId: report.runId }),
  );
  const outs = {
    node: inputs.node,
    targets: inputs.targets,
    wave: inputs.wave ?? null,
    result: undrainable === undefined ? report.result : SKIPPED_RESULT,
    skipped: undrainable ?? null,
    held: null,
    runId: report.runId,
    versionsBefore: report.versions.before,
    versionsAfter: report.versions.after,
    steps: report.steps.map((s) => ({ name: s.name, status: s.status, summary: s.summary, durationMs: s.durationMs })),
    audit: report.audit ?? null,
    durationMs: report.durationMs,
    providerMs: Date.now() - started,
  };
  await tell({ result: outs.result, runId: outs.runId, versionsBefore: outs.versionsBefore, versionsAfter: outs.versionsAfter, durationMs: outs.durationMs, ...(undrainable !== undefined ? { error: undrainable } : {}) });
  return outs;
}

/** A node's inputs as the provider reads them: the fleet's settings (packed by resource.ts) beside the node's own.
 * A state written before the packing has them flat already. */
export function unpackInputs(packed: ProviderInputs & { fleetSettings?: Partial<ProviderInputs> }): ProviderInputs {
  const { fleetSettings, ...own } = packed;
  return { ...fleetSettings, ...own } as ProviderInputs;
}

export async function check(_olds: ProviderInputs, packed: ProviderInputs) {
  const news = unpackInputs(packed);
  const failures = [];
  if (typeof news.node !== 'string' || news.node === '') failures.push({ property: 'node', reason: 'node is required' });
  const reboots = news.reboot !== undefined && news.reboot.policy !== 'never';
  // A node with nothing pending has no targets: it is unchanged, not wrong.
  if (!news.targets || (Object.keys(news.targets).length === 0 && !reboots && !news.pendingUpgrades)) failures.push({ property: 'targets', reason: 'targets are required unless the fleet reboots or takes pending upgrades' });
  return { inputs: packed, failures };
}

export async function diff(_id: string, olds: ProviderInputs, news: ProviderInputs) {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const replaces = olds.node === news.node ? [] : ['node'];
  // The program refuses a node it cannot read; a node without observed versions is never taken as done from the
  // state (that said "unchanged" for a node nobody had looked at): it runs, and its runbook reads it for real.
  const changes =
    replaces.length > 0 || !same(olds.targets, news.targets) || news.observed === undefined || !same(news.observed, news.targets) || news.unfinished !== undefined || news.rebootWanted !== undefined || news.rebootUnknown !== undefined;
  return { changes, replaces, deleteBeforeReplace: true };
}

/** A node's run in the provider's process: stopped by a cancelled `pulumi up`, and by the end of its `pulumi`. */
function runInProvider(inputs: ProviderInputs) {
  const provider = providerProcess();
  return provider.track(runNode(inputs, { log: provider.log, stop: provider.stop }));
}

export async function create(inputs: ProviderInputs) {
  return { id: inputs.node, outs: await runInProvider(unpackInputs(inputs)) };
}

export async function update(_id: string, _olds: ProviderInputs, news: ProviderInputs) {
  return { outs: await runInProvider(unpackInputs(news)) };
}
