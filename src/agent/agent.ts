import { randomBytes } from 'node:crypto';
import { isConflict, isNotFound, type Cluster } from '../cluster/api.js';
import { ExitCode, messageOf } from '../errors.js';
import { isUnfinished, type Journal } from '../runbook/journal.js';
import * as realHost from './host.js';
import { policyRefusals, type AgentPolicy } from './policy.js';
import { appendOutput, getRun, isEnded, lastStep, phaseOfExit, REPORT_KEPT, writeStatus, type MaintenanceRun, type RunStatus } from './run-object.js';
import { mintRunToken, renewalDue } from './run-token.js';
import { agentlessSeconds, readSpec, runArguments, type RunSpec } from './spec.js';

// One look of a node's agent at its MaintenanceRun, and what follows, decided from the host and the run's journal,
// never from the object alone: a new run is checked against the owner's policy and claimed (a status written over
// the version read, so a stop that lands first is seen) before its unit starts; a claimed run is started unless
// systemd already has its unit; a run under way has its output published and its stop passed on; an ended one its
// exit code, and its unit is removed once nothing it started is left (an apt it left going finishes); a run whose
// node rebooted under it is started again only when its journal says it is unfinished.

/** A run is started at most this many times (its first boot and the reboots it asks). */
const MAX_STARTS = 4;
/** While a run is up, the status says the agent looked at least this often (a caller tells a quiet run from a lost agent). */
const SEEN_EVERY_MS = 30_000;

/** What the agent does on its node's host (host.ts; a test gives a fake). */
export type AgentHost = Pick<
  typeof realHost,
  'bootId' | 'forgetCredentials' | 'installedVersion' | 'olderThan' | 'readOutput' | 'readReport' | 'removeUnit' | 'runUnits' | 'shuttingDown' | 'signalUnit' | 'stageRuntime' | 'startUnit' | 'unitProcesses' | 'unitState' | 'writeCredentials' | 'writeRequest'
>;

export interface AgentSetup {
  cluster: Cluster;
  host?: AgentHost;
  node: string;
  /** The owner's policy as the agent's configuration says it now, or why there is none (every run is then refused). */
  policy: () => Promise<AgentPolicy | string>;
  /** The node's run journal (its Lease), or undefined when it has none. */
  journal: (leaseNamespace: string) => Promise<Journal | undefined>;
  log: (line: string) => void;
  /** Tokens the agent gave its runs, by run id: when to renew each (kept in memory; a restarted agent renews at once). */
  tokens?: Map<string, { expiresAt: Date; mintedAt: Date }>;
  now?: () => number;
}

const unitName = (id: string) => `node-maint-run-${id}`;
/** The run's id, its unit's and its files' name: the object's own UID (hex, the API server's), so known from the start. */
export const runIdOf = (run: MaintenanceRun) => (run.metadata.uid ?? '').replace(/-/g, '').slice(0, 12) || randomBytes(6).toString('hex');
const nowOf = (setup: AgentSetup) => new Date(setup.now?.() ?? Date.now()).toISOString();

/** What one look found: nothing to act on, a run under way (look again soon), or a run's end published. */
export type AgentLook = 'idle' | 'running' | 'ended';

export async function agentTick(setup: AgentSetup): Promise<AgentLook> {
  const host = setup.host ?? realHost;
  const run = await getRun(setup.cluster, setup.node);
  await tendOrphans(setup, host, run);
  if (!run) return 'idle';
  if (isEnded(run)) return tidy(setup, host, run);
  let next: RunStatus | undefined;
  try {
    next = await advance(setup, host, run);
  } catch (e) {
    setup.log(`could not look at the run on ${setup.node}: ${messageOf(e)}`);
    return 'running';
  }
  if (!next) return 'running';
  let written: MaintenanceRun;
  try {
    written = await writeStatus(setup.cluster, run, next);
  } catch (e) {
    // The requester wrote meanwhile (a stop, a withdrawal): the next look reads it and decides again.
    if (isConflict(e) || isNotFound(e)) return 'running';
    throw e;
  }
  return isEnded(written) ? tidy(setup, host, written) : 'running';
}

const say = (status: RunStatus, line: string): RunStatus => ({ ...status, ...appendOutput(status, `node-maint agent: ${line}\n`) });
const ended = (setup: AgentSetup, status: RunStatus, exitCode: number, message: string, phase = phaseOfExit(exitCode)): RunStatus => ({ ...say(status, message), phase, exitCode, message: message.slice(0, 4000), endedAt: nowOf(setup) });

async function advance(setup: AgentSetup, host: AgentHost, run: MaintenanceRun): Promise<RunStatus | undefined> {
  const status = run.status ?? {};
  if (!status.phase) return claim(setup, host, run);
  // Checked when it was claimed; the API keeps a spec as it was written.
  const spec = readSpec(run.spec, setup.node);
  const id = status.runId!;
  const unit = unitName(id);
  const boot = await host.bootId();
  const state = await host.unitState(unit);
  // Started by an agent that died before it wrote so: systemd has the unit, and the unit is the truth.
  if (status.phase === 'Starting' && state.known) return { ...say(status, `the run's unit ${unit} is on ${setup.node} already: following it`), phase: 'Running', unit, boot, starts: Math.max(1, status.starts ?? 0), startedAt: status.startedAt ?? nowOf(setup) };
  if (state.known) return follow(setup, host, { run, status, unit, id, state, spec });
  if (status.phase === 'Starting' && status.boot === boot) {
    if (run.spec.stop) return ended(setup, status, ExitCode.stopped, `a stop was asked (${run.spec.stop.reason}) before the run started: nothing was started`);
    return withPolicy(setup, status, (policy) => start(setup, host, { status, spec, policy, id, boot }));
  }
  // Its reboot step's shutdown ends the run's process too: the next boot decides, not this one's last look.
  if (status.boot !== boot && (await host.shuttingDown())) return undefined;
  // The run's process is gone: all it wrote is published before the agent's own word on it.
  const done = await withRestOfOutput(host, status, id);
  if (status.boot === boot) return ended(setup, done, ExitCode.internal, `the run's unit ${unit} is gone from ${setup.node} without its exit status (removed by hand?)`);
  return withPolicy(setup, done, (policy) => afterBoot(setup, host, { status: done, spec, policy, id, boot }));
}

/** The owner's policy for what follows (where the run's Lease is), or the run ended saying there is none. */
async function withPolicy(setup: AgentSetup, status: RunStatus, then: (policy: AgentPolicy) => Promise<RunStatus>): Promise<RunStatus> {
  const policy = await setup.policy();
  if (typeof policy === 'string') return ended(setup, status, ExitCode.usage, `${policy}: the run is not started`);
  return then(policy);
}

/** A new run: refused by name (nothing started) unless it is well formed and its owner's policy allows all it asks; else claimed. */
async function claim(setup: AgentSetup, host: AgentHost, run: MaintenanceRun): Promise<RunStatus> {
  const status: RunStatus = { output: '', outputFrom: 0 };
  if (run.spec?.stop) return ended(setup, status, ExitCode.stopped, `the request was withdrawn (${run.spec.stop.reason}) before any agent started it: nothing was started`);
  let spec: RunSpec;
  try {
    spec = readSpec(run.spec, setup.node);
  } catch (e) {
    return ended(setup, status, ExitCode.usage, `refused the request: ${messageOf(e)}; nothing was started`, 'Refused');
  }
  const policy = await setup.policy();
  if (typeof policy === 'string') return ended(setup, status, ExitCode.usage, `refused the request: ${policy}; nothing was started`, 'Refused');
  const refused = policyRefusals(spec, policy, await downgrades(host, spec));
  if (refused.length > 0) return ended(setup, status, ExitCode.usage, `refused the request, which asks what the node's owner does not allow: ${refused.join('; ')}; nothing was started`, 'Refused');
  setup.log(`claimed the run of ${spec.requestedBy} on ${setup.node}`);
  return { ...status, phase: 'Starting', runId: runIdOf(run), boot: await host.bootId(), starts: 0, claimedAt: nowOf(setup) };
}

/** The targets older than what the node has installed (a rollback restores, and is none): "runc 1.1.5 -> 1.1.4". */
async function downgrades(host: AgentHost, spec: RunSpec): Promise<string[]> {
  if (spec.command !== 'upgrade' || spec.upgrade?.rollback) return [];
  const out: string[] = [];
  for (const t of spec.upgrade?.targets ?? []) {
    const installed = await host.installedVersion(t.package);
    if (installed && (await host.olderThan(t.version, installed))) out.push(`${t.package} ${installed} -> ${t.version}`);
  }
  return out;
}

interface Starting {
  status: RunStatus;
  spec: RunSpec;
  policy: AgentPolicy;
  id: string;
  boot: string;
}

/** The run's unit started (its token, kubeconfig and request written first); "nothing was started" is said only when true. */
async function start(setup: AgentSetup, host: AgentHost, { status, spec, policy, id, boot }: Starting): Promise<RunStatus> {
  const unit = unitName(id);
  try {
    const runtime = await host.stageRuntime();
    const token = await mintRunToken(setup.cluster, setup.node, agentlessSeconds(spec));
    await host.writeCredentials(id, token.token, setup.cluster.kubeconfigAs('node-maint:node-maint-run', { tokenFile: realHost.tokenFile(id) }));
    (setup.tokens ??= new Map()).set(id, { expiresAt: token.expiresAt, mintedAt: new Date(setup.now?.() ?? Date.now()) });
    const at = { kubeconfig: realHost.kubeconfigFile(id), textfileDir: realHost.TEXTFILE_DIR, leaseNamespace: policy.leaseNamespace, smokeNamespace: policy.smokeNamespace };
    await host.writeRequest(id, runArguments(spec, at));
    await host.removeUnit(unit);
    await host.startUnit(unit, runtime, id);
  } catch (e) {
    // Nothing of the run started (its token refused, the host's systemd refusing the unit): said, not retried.
    setup.log(`could not start ${unit}: ${messageOf(e)}`);
    await host.forgetCredentials(id).catch(() => undefined);
    return ended(setup, status, ExitCode.preflight, `could not start the run on ${setup.node}: ${messageOf(e)}; nothing was started`);
  }
  setup.log(`started ${unit} for ${spec.requestedBy}`);
  return { ...status, phase: 'Running', unit, boot, starts: (status.starts ?? 0) + 1, startedAt: status.startedAt ?? nowOf(setup), seenAt: nowOf(setup) };
}

/**
 * The node rebooted under the run (its own reboot step, a crash, a power cut) or before it started: started again
 * unless the run's journal says it is over (a journal written since the claim, finished: by this run before the boot,
 * or by a run over SSH meanwhile), never because the request says so.
 */
async function afterBoot(setup: AgentSetup, host: AgentHost, s: Starting): Promise<RunStatus> {
  const { status, spec, policy } = s;
  const node = setup.node;
  if (status.phase === 'Running' && (spec.command === 'audit' || spec.upgrade?.dryRun)) return ended(setup, status, spec.command === 'audit' ? ExitCode.couldNotAudit : ExitCode.internal, `${node} rebooted during the ${spec.command === 'audit' ? 'audit' : 'dry run'}: not started again (run it again)`);
  if ((status.starts ?? 0) >= MAX_STARTS) return ended(setup, status, ExitCode.internal, `the run was started ${status.starts} times and ${node} rebooted under it again: not starting it once more`);
  if (spec.stop) return ended(setup, status, ExitCode.stopped, `${node} rebooted under the run, and a stop was asked (${spec.stop.reason}): not starting it again; the same command continues it`);
  const journal = await setup.journal(policy.leaseNamespace);
  const unfinished: boolean = isUnfinished(journal);
  if (journal && !unfinished && Date.parse(journal.updatedAt) >= Date.parse(status.claimedAt ?? '')) {
    const code = journal.status === 'completed' ? ExitCode.ok : journal.status === 'rolled-back' ? ExitCode.stepFailedRolledBack : ExitCode.internal;
    return ended(setup, status, code, `${node} is up on a new boot, and its journal says run ${journal.runId} is ${journal.status} (${journal.updatedAt}): the run is over, not started again`);
  }
  const why = unfinished && journal ? `its journal says run ${journal.runId} is unfinished (${journal.status}): continuing it` : 'the run had not begun its work: starting it';
  return start(setup, host, { ...s, status: say(status, `${node} is up on a new boot, and ${why}`) });
}

/** The status with the rest of the run's output, half lines too (its process is gone). */
async function withRestOfOutput(host: AgentHost, status: RunStatus, id: string): Promise<RunStatus> {
  const rest = await host.readOutput(id, status.read ?? 0);
  return rest.length === 0 ? status : { ...status, ...appendOutput(status, rest.toString()), read: (status.read ?? 0) + rest.length, step: lastStep(rest.toString(), status.step) };
}

interface Following {
  run: MaintenanceRun;
  status: RunStatus;
  unit: string;
  id: string;
  state: Awaited<ReturnType<AgentHost['unitState']>>;
  spec: RunSpec;
}

/** The run under way: its new output, the stop passed on, its token renewed; once ended, its exit code and report. */
async function follow(setup: AgentSetup, host: AgentHost, { run, status, unit, id, state, spec }: Following): Promise<RunStatus | undefined> {
  const fresh = await host.readOutput(id, status.read ?? 0);
  // Whole lines only while it runs: a line half written is published when it ends.
  const lines = state.running ? fresh.subarray(0, fresh.lastIndexOf('\n') + 1) : fresh;
  let next: RunStatus = lines.length > 0 ? { ...status, ...appendOutput(status, lines.toString()), read: (status.read ?? 0) + lines.length, step: lastStep(lines.toString(), status.step) } : status;
  if (state.running) {
    if (run.spec.stop && !next.stopSent) {
      await host.signalUnit(unit, run.spec.stop.reason.startsWith('SIG') ? run.spec.stop.reason : 'SIGINT');
      setup.log(`passed ${run.spec.stop.reason} to ${unit}`);
      next = { ...next, stopSent: true };
    }
    await renewToken(setup, host, id, spec);
    const seenLongAgo = Date.parse(status.seenAt ?? '') < (setup.now?.() ?? Date.now()) - SEEN_EVERY_MS || !status.seenAt;
    if (next === status && !seenLongAgo) return undefined;
    return { ...next, seenAt: nowOf(setup) };
  }
  // Its reboot step's shutdown ends the run's process too: the run goes on on the next boot, not ended here.
  if (await host.shuttingDown()) return next === status ? undefined : next;
  setup.log(`${unit} ended: exit ${state.exit}`);
  const report = await host.readReport(id);
  return { ...next, phase: phaseOfExit(state.exit ?? 1), exitCode: state.exit ?? 1, report: report.slice(-REPORT_KEPT), endedAt: nowOf(setup) };
}

async function renewToken(setup: AgentSetup, host: AgentHost, id: string, spec: RunSpec): Promise<void> {
  const known = setup.tokens?.get(id);
  if (known && !renewalDue(known, setup.now?.())) return;
  try {
    const token = await mintRunToken(setup.cluster, setup.node, agentlessSeconds(spec));
    await host.writeCredentials(id, token.token);
    (setup.tokens ??= new Map()).set(id, { expiresAt: token.expiresAt, mintedAt: new Date(setup.now?.() ?? Date.now()) });
  } catch (e) {
    setup.log(`could not renew the token of run ${id}: ${messageOf(e)} (it is asked again at the next look)`);
  }
}

/**
 * An ended run's unit is removed (and its credentials) only once nothing it started is left in it: a stop at the
 * install's safe point leaves apt and dpkg to finish, and removing the unit then would kill them.
 */
async function tidy(setup: AgentSetup, host: AgentHost, run: MaintenanceRun): Promise<AgentLook> {
  const status = run.status!;
  if (!status.unit || status.unitRemoved) return 'idle';
  const left = await host.unitProcesses(status.unit).catch(() => undefined);
  if (left !== undefined && left > 0) return 'running';
  await host.removeUnit(status.unit);
  await host.forgetCredentials(status.runId!);
  setup.tokens?.delete(status.runId!);
  await writeStatus(setup.cluster, run, { ...status, unitRemoved: true }).catch((e: unknown) => setup.log(`could not record that ${status.unit} was removed: ${messageOf(e)}`));
  return 'ended';
}

/** Units of runs whose MaintenanceRun is gone (deleted while they ran): left to end, then removed once empty. */
async function tendOrphans(setup: AgentSetup, host: AgentHost, run: MaintenanceRun | undefined): Promise<void> {
  const current = run?.status?.unit;
  for (const unit of await host.runUnits().catch(() => [] as string[])) {
    if (unit === current) continue;
    const state = await host.unitState(unit);
    if (state.running || ((await host.unitProcesses(unit)) ?? 0) > 0) continue;
    setup.log(`removing ${unit}: its run ended and its MaintenanceRun is gone`);
    await host.removeUnit(unit);
    await host.forgetCredentials(unit.replace(/^node-maint-run-/, ''));
  }
}
