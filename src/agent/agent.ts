import { isConflict, isNotFound, type Cluster } from '../cluster/api.js';
import { writeConfigMap } from '../cluster/configmaps.js';
import { ExitCode, messageOf } from '../errors.js';
import * as realHost from './host.js';
import { agentConfigMapName, appendOutput, readExchange, validateRequest, writeExchange, type AgentExchange } from './protocol.js';

// One look of a node's agent at its ConfigMap, and what follows: a new request starts its run as a unit on the host;
// a run under way has its new output published and the caller's stop passed on; a run that ended has its exit code
// published and its unit and credentials removed; a run whose node rebooted under it (its own reboot step) is
// started again on the new boot, the same command, which goes on from its journal.

/** A run is started at most this many times (its first boot and the reboots it asks). */
const MAX_STARTS = 4;

/** What the agent does on its node's host (host.ts; a test gives a fake). */
export type AgentHost = Pick<typeof realHost, 'bootId' | 'forgetKubeconfig' | 'readOutput' | 'readReport' | 'removeUnit' | 'shuttingDown' | 'signalUnit' | 'stageRuntime' | 'startUnit' | 'unitState' | 'writeKubeconfig'>;

export interface AgentSetup {
  cluster: Cluster;
  host?: AgentHost;
  node: string;
  namespace: string;
  /** Short-lived credentials of the runbook's own ServiceAccount, for one run (a kubeconfig file's text). */
  credentials: () => Promise<string>;
  log: (line: string) => void;
}

const unitName = (id: string) => `node-maint-run-${id}`;

/** What one look found: no request to act on, a run under way (or just started), or a run's end published (the
 * node's facts are worth reading again). */
export type AgentLook = 'idle' | 'running' | 'ended';

/** One look at the node's request, and what follows. */
export async function agentTick(setup: AgentSetup): Promise<AgentLook> {
  const { cluster, node, namespace } = setup;
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${agentConfigMapName(node)}`;
  const object = await cluster.get<{ metadata: { resourceVersion: string; labels?: Record<string, string> }; data?: Record<string, string> }>(path).catch((e: unknown) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
  if (!object) return 'idle';
  const before = readExchange(object.data);
  if (!before.request || before.exit !== undefined) return 'idle';
  const after = await advance(setup, before);
  if (after === before) return 'running';
  try {
    await writeConfigMap(cluster, namespace, agentConfigMapName(node), writeExchange(after), { labels: object.metadata.labels, resourceVersion: object.metadata.resourceVersion });
  } catch (e) {
    // The caller wrote meanwhile (a stop): the next look reads it and publishes again from the file.
    if (isConflict(e)) return 'running';
    throw e;
  }
  // Only once its exit is published: the unit keeps the exit status until then.
  if (after.exit !== undefined && after.unit && after.request) {
    const host = setup.host ?? realHost;
    await host.removeUnit(after.unit.name);
    await host.forgetKubeconfig(after.request.id);
  }
  return after.exit !== undefined ? 'ended' : 'running';
}

const say = (x: AgentExchange, line: string): AgentExchange => ({ ...x, ...appendOutput(x, `node-maint agent: ${line}\n`) });

async function advance(setup: AgentSetup, x: AgentExchange): Promise<AgentExchange> {
  const { bootId, forgetKubeconfig, removeUnit, stageRuntime, startUnit, writeKubeconfig } = setup.host ?? realHost;
  const boot = await bootId();
  let request;
  try {
    request = validateRequest(x.request, setup.node);
  } catch (e) {
    return { ...say(x, `refused the request: ${messageOf(e)}; nothing was started`), exit: ExitCode.usage };
  }
  const name = unitName(request.id);
  if (x.unit && x.unit.boot === boot) return follow(setup, x, name, request.id);
  if (x.unit && x.unit.starts >= MAX_STARTS) return { ...say(x, `the run was started ${x.unit.starts} times and ${setup.node} rebooted under it again: not starting it once more`), exit: ExitCode.internal };
  if (x.stop && !x.unit) return { ...say(x, `a stop was asked (${x.stop}) before the run started: nothing was started`), exit: ExitCode.stopped };
  if (x.stop && x.unit) return { ...say(x, `${setup.node} rebooted under the run, and a stop was asked (${x.stop}): not starting it again; the same command continues it`), exit: ExitCode.stopped };
  try {
    const runtime = await stageRuntime();
    await writeKubeconfig(request.id, await setup.credentials());
    await removeUnit(name);
    await startUnit(name, runtime, request.command, request.args, request.id);
  } catch (e) {
    // Nothing of the run started (its credentials refused, the host's systemd refusing the unit): said, not retried.
    setup.log(`could not start ${name}: ${messageOf(e)}`);
    await forgetKubeconfig(request.id).catch(() => undefined);
    return { ...say(x, `could not start the run on ${setup.node}: ${messageOf(e)}; nothing was started`), exit: ExitCode.preflight };
  }
  setup.log(`started ${request.command} ${request.args.join(' ')} as ${name} (request by ${request.by})`);
  const again = x.unit ? say(x, `${setup.node} is up on a new boot: continuing the run (the same command, from its journal)`) : x;
  return { ...again, unit: { name, boot, starts: (x.unit?.starts ?? 0) + 1 } };
}

/** The run under way: its new output, the stop passed on; once ended, its exit code, and nothing of it left on the host. */
async function follow(setup: AgentSetup, x: AgentExchange, name: string, id: string): Promise<AgentExchange> {
  const { readOutput, readReport, shuttingDown, signalUnit, unitState } = setup.host ?? realHost;
  const state = await unitState(name);
  const fresh = await readOutput(id, x.read ?? 0);
  // Whole lines only while it runs: a line half written is published when it ends.
  const lines = state.running ? fresh.subarray(0, fresh.lastIndexOf('\n') + 1) : fresh;
  let next: AgentExchange = lines.length > 0 ? { ...x, ...appendOutput(x, lines.toString()), read: (x.read ?? 0) + lines.length } : x;
  if (state.running && next.stop && !next.stopSent) {
    await signalUnit(name, next.stop.startsWith('SIG') ? next.stop : 'SIGINT');
    setup.log(`passed ${next.stop} to ${name}`);
    next = { ...next, stopSent: true };
  }
  if (state.running) return next;
  // Its reboot step's shutdown ends the run's process too: the run goes on on the next boot, not ended here.
  if (await shuttingDown()) return next;
  const exit = state.known ? state.exit! : 1;
  if (!state.known) next = say(next, `the run's unit ${name} is gone from ${setup.node} without its exit status (removed by hand?)`);
  setup.log(`${name} ended: exit ${exit}`);
  return { ...next, exit, report: await readReport(id) };
}
