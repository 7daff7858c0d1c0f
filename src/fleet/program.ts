import * as pulumi from '@pulumi/pulumi';
import { Cluster } from '../cluster/api.js';
import { isControlPlane } from '../cluster/nodes.js';
import { listAll } from '../cluster/list.js';
import { hasWaitingTaint, setWaitingTaint, WAITING_TAINT_KEY, waitingTaintValue } from './waiting-taint.js';
import { slimPod } from '../cluster/pods.js';
import { LEASE_PREFIX, leasePath } from '../cluster/lease.js';
import type { Lease, Node, Pod } from '../cluster/types.js';
import { describeUnfinished, journalOf, rebootInFlight } from '../runbook/journal.js';
import { RunbookError } from '../errors.js';
import { waitUntil, WaitTimedOut } from '../wait.js';
import type { NodeConnection } from './apply.js';
import { describeFactsAge, describeLastAudit, notOffered, observedFromFacts, observeNode, summarizeLastAudits, type ObservedNode } from './observe.js';
import { readAllFacts } from '../agent/facts.js';
import { CONFIG_NAMESPACE, ConfigError, parseFleetConfig, type FleetConfig } from './config/index.js';
import { describeOrder, orderFleet, podsPerNode } from './order.js';
import { pauseHold, readPause } from './pause.js';
import { fleetNotObserved, fleetStarted, postMessage, type LaterNodes } from './notify.js';
import { fleetEnd, heldNodes, skippedNodes } from './outputs.js';
import { SERVICE_ACCOUNT } from './rbac-objects.js';
import { NodeRuntimeUpgrade } from './resource.js';
import { planFleetWaves } from './waves.js';
import { describeWindow, localTime, windowAt } from './window.js';
import { nodeTimeoutMinutes } from './node-timeout.js';
import { blockingPodsPlan } from './blocking-pods.js';

// Pulumi's SDK captures and formats (through source-map-support) a stack trace for every promise and every resource
// it makes: at 1,000 nodes that was half of `pulumi preview` (bench:fleet, 35 s -> 18 s). The program's errors are
// messages for operators; NODE_MAINT_STACK_TRACE_LIMIT=10 brings stacks back for debugging.
Error.stackTraceLimit = Number(process.env.NODE_MAINT_STACK_TRACE_LIMIT ?? 0);

// `pulumi up`: one NodeRuntimeUpgrade per node, in waves of at most maxUnavailable nodes; each wave waits for the
// whole wave before it, so a failed node stops every node after it. `pulumi preview` shows each node's current and
// target versions and changes nothing.
async function resolveNodes(cluster: Cluster, config: FleetConfig): Promise<Node[]> {
  const selector = config.nodeSelector ? `?labelSelector=${encodeURIComponent(config.nodeSelector)}` : '';
  const all = await listAll<Node>(cluster, `/api/v1/nodes${selector}`);
  if (config.nodeSelector) {
    if (all.length === 0) throw new ConfigError('nodeSelector', `selects no node (${config.nodeSelector})`);
    return all.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  }
  const byName = new Map(all.map((n) => [n.metadata.name, n]));
  const missing = config.nodes!.filter((n) => !byName.has(n));
  if (missing.length > 0) throw new ConfigError('nodes', `no such node: ${missing.join(', ')}`);
  return config.nodes!.map((n) => byName.get(n)!);
}

function connectionFor(config: FleetConfig, node: Node): NodeConnection {
  if (config.access === 'agent') return { kind: 'agent' };
  const name = node.metadata.name;
  const container = config.dockerExec?.containers[name];
  if (container) return { kind: 'docker-exec', container, dockerHost: config.dockerExec?.dockerHost };
  const [host, port] = (config.ssh.hosts[name] ?? '').split(':');
  const address = host || node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address || name;
  return {
    kind: 'ssh',
    host: address,
    port: port ? Number(port) : config.ssh.port,
    user: config.ssh.user,
    knownHosts: config.ssh.knownHosts ?? `${process.env.HOME ?? '/root'}/.ssh/known_hosts`,
    ...(config.ssh.bastion ? { bastion: config.ssh.bastion } : {}),
  };
}

/** How long `pulumi up` waits for the first facts of agents the stack makes (their image pulled, their first read). */
const AGENT_FACTS_WAIT_MS = 180_000;

/**
 * Through the agents: what each one published, in one list, and no session to any node. Agents this stack makes (agent)
 * may not have published yet: `up` waits for them; a preview names those nodes as not observed yet (`awaiting`), and
 * plans them as changes, never as unchanged.
 */
async function observeThroughAgents(cluster: Cluster, config: FleetConfig, nodes: Node[]): Promise<{ observed: Array<ObservedNode | string>; awaiting: Set<string> }> {
  let facts = await readAllFacts(cluster);
  const silent = () => nodes.map((n) => n.metadata.name).filter((n) => !facts.has(n));
  if (config.agent && !pulumi.runtime.isDryRun() && silent().length > 0) {
    pulumi.log.info(`waiting up to ${AGENT_FACTS_WAIT_MS / 1000}s for the first facts of the agents this stack makes on ${silent().length} node(s)`);
    const published = async () => {
      facts = await readAllFacts(cluster);
      return silent().length === 0 || `${silent().length} node(s) without facts yet`;
    };
    // Past the wait, the nodes still silent are refused below, by name.
    await waitUntil('the agents\' first facts', published, { timeoutMs: AGENT_FACTS_WAIT_MS, intervalMs: 5_000, onChange: (seen) => pulumi.log.info(seen) }).catch((e: unknown) => {
      if (!(e instanceof WaitTimedOut)) throw e;
    });
  }
  const awaiting = new Set(config.agent && pulumi.runtime.isDryRun() ? silent() : []);
  return { observed: nodes.map((n) => observedFromFacts(n.metadata.name, facts.get(n.metadata.name), config.targets, config.reboot.policy === 'if-required')), awaiting };
}

/** What each node has and is offered, read-only, a few nodes at a time; why, where the node cannot be read. */
async function observeAll(cluster: Cluster, config: FleetConfig, nodes: Node[], connections: NodeConnection[]): Promise<{ observed: Array<ObservedNode | string>; awaiting: Set<string> }> {
  if (config.access === 'agent') return observeThroughAgents(cluster, config, nodes);
  const out: Array<ObservedNode | string> = new Array(nodes.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < nodes.length; i = next++) {
      try {
        out[i] = await observeNode(connections[i]!, config.sshKey, config.targets, config.reboot.policy === 'if-required' ? { sentinelCommand: config.reboot.sentinelCommand } : undefined, config.pendingUpgrades);
      } catch (e) {
        out[i] = e instanceof RunbookError ? e.message : String(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(16, nodes.length) }, worker));
  return { observed: out, awaiting: new Set() };
}

/** Whether the stack holds a config key as a secret, as the SDK itself tells (runtime/config.js isConfigSecret reads
 * the keys the engine lists in PULUMI_CONFIG_SECRET_KEYS); that helper is internal, so the list is read if it goes. */
function isConfigSecret(key: string): boolean {
  const fromSdk = (pulumi.runtime as unknown as { isConfigSecret?: (k: string) => boolean }).isConfigSecret;
  if (typeof fromSdk === 'function') return fromSdk(key);
  const listed: unknown = JSON.parse(process.env.PULUMI_CONFIG_SECRET_KEYS || '[]');
  return Array.isArray(listed) && listed.includes(key);
}

/** The nodes that are control-plane nodes, and why (their role label, or the static pods they run). */
function controlPlaneNodes(pods: Pod[], nodes: Node[]): Map<string, string> {
  const statics = pods.filter((p) => p.metadata.namespace === 'kube-system');
  const found = new Map<string, string>();
  for (const n of nodes) {
    const why = isControlPlane(n, statics.filter((p) => p.spec.nodeName === n.metadata.name));
    if (why) found.set(n.metadata.name, why);
  }
  return found;
}

/** Whether `pulumi up` would start a node now, told at preview time; the provider checks again as each node starts. */
async function logHolds(cluster: Cluster, config: FleetConfig, now: Date): Promise<void> {
  const window = config.maintenanceWindow;
  if (window) {
    const verdict = windowAt(window, now);
    pulumi.log.info(
      verdict.inside
        ? `inside the ${describeWindow(window)} until ${verdict.closesAt} (${localTime(verdict.closesAt, window.timeZone)}); a node started by then runs to its end`
        : `outside the ${describeWindow(window)}: \`pulumi up\` starts no node until it opens next at ${verdict.nextOpensAt} (${localTime(verdict.nextOpensAt, window.timeZone)})`,
    );
  }
  const paused = pauseHold(config.leaseNamespace, await readPause(cluster, config.leaseNamespace));
  pulumi.log.info(paused ? `\`pulumi up\` starts no node: ${paused}` : `not paused (no ConfigMap ${config.leaseNamespace}/node-maint-pause)`);
}

/** A node whose versions could not be read is never planned as "unchanged" from the state: preview and up stop,
 * naming it and why; `up` tells the webhook the fleet failed before any node changed. */
async function refuseUnobserved(nodes: Node[], observed: Array<ObservedNode | string>, config: FleetConfig, fleet: string): Promise<void> {
  const unread = nodes.flatMap((n, i) => (typeof observed[i] === 'string' ? [`${n.metadata.name} (${observed[i]})`] : []));
  if (unread.length === 0) return;
  const noKey = config.access === 'ssh' && !config.sshKey && nodes.some((n) => !config.dockerExec?.containers[n.metadata.name]);
  const hint = noKey ? '; no SSH key is set: `pulumi config set --secret node-maint:sshKey < KEY`, or list the nodes in dockerExec.containers' : '';
  if (!pulumi.runtime.isDryRun()) await postMessage(config.webhook, fleetNotObserved(fleet, unread, nodes.length), (l) => pulumi.log.warn(l));
  throw new pulumi.RunError(`cannot observe ${unread.length} of ${nodes.length} node(s), so no node is planned or changed: ${unread.join('; ')}${hint}`);
}

/** For each wave, the nodes of the waves after it (up to 20 names), which never start if it fails. */
function laterNodes(waves: string[][]): LaterNodes[] {
  return waves.map((_, w) => {
    const after = waves.slice(w + 1).flat();
    return { names: after.slice(0, 20), count: after.length };
  });
}

/**
 * The fleet's nodes whose Lease carries an unfinished run ("run R, running"), and those of them whose reboot is under
 * way (silent until they are back: their runs wait for them), from one list of the runbook's Leases.
 */
async function unfinishedRuns(cluster: Cluster, namespace: string, names: string[]): Promise<{ runs: Map<string, string>; rebooting: Set<string>; targets: Map<string, Record<string, string>> }> {
  const leases = await listAll<Lease>(cluster, `${leasePath(namespace)}?labelSelector=${encodeURIComponent('app.kubernetes.io/managed-by=node-maint')}`);
  const wanted = new Set(names);
  const runs = new Map<string, string>();
  const rebooting = new Set<string>();
  const targets = new Map<string, Record<string, string>>();
  for (const l of leases) {
    const node = l.metadata.name.slice(LEASE_PREFIX.length);
    const journal = journalOf(l);
    const run = describeUnfinished(journal);
    if (!l.metadata.name.startsWith(LEASE_PREFIX) || !wanted.has(node) || !run) continue;
    runs.set(node, run);
    targets.set(node, journal!.targets);
    if (rebootInFlight(journal)) rebooting.add(node);
  }
  return { runs, rebooting, targets };
}

/** The nodes grouped by the wave each last ran in (from its outputs), in wave order, each wave by name. */
function ranWaves(resources: Record<string, NodeRuntimeUpgrade>): pulumi.Output<string[][]> {
  return pulumi.all(Object.entries(resources).map(([name, r]) => r.wave.apply((w) => [name, w] as const))).apply((pairs) => {
    const waves = new Map<number, string[]>();
    for (const [name, w] of pairs) waves.set(w ?? Number.MAX_SAFE_INTEGER, [...(waves.get(w ?? Number.MAX_SAFE_INTEGER) ?? []), name]);
    // By name within a wave: the order the program registers them in follows the plan, which pod counts move.
    return [...waves].sort(([a], [b]) => a - b).map(([, names]) => names.sort());
  });
}

const atTargets = (seen: ObservedNode | string, targets: Record<string, string>) => typeof seen === 'object' && Object.entries(targets).every(([p, v]) => seen.installed[p] === v);

/** Why the node is rebooted by this `pulumi up`, or undefined: reboot: always, or if-required where the node says so. */
function rebootOf(config: FleetConfig, seen: ObservedNode | string): string | undefined {
  if (config.reboot.policy === 'always') return 'reboot: always';
  return config.reboot.policy === 'if-required' && typeof seen === 'object' ? seen.rebootRequired : undefined;
}

/**
 * Through the agents, "no reboot required" is only what the agent read at its last look: a sentinel that appeared
 * since is not in its facts. Such a node is a change whose run reads the node itself (its preflight decides, and ends
 * "nothing to do" when nothing is), never "unchanged" on the word of old facts. Why, for the plan and the state.
 */
function rebootUnknown(config: FleetConfig, seen: ObservedNode | string): string | undefined {
  if (config.access !== 'agent' || config.reboot.policy !== 'if-required' || typeof seen !== 'object' || seen.rebootRequired) return undefined;
  return `no reboot required as of its agent's facts (written ${seen.factsAt ?? 'at an unknown time'}): \`pulumi up\` has its run read the node's sentinel`;
}

/**
 * `pulumi up` and `pulumi preview`. A mistake in the config or the cluster the program can name (a ConfigError, a
 * RunbookError) is said as an error of its own, without the "unhandled exception" and stack that would read as a crash.
 */
export default async function program() {
  try {
    return await planFleet();
  } catch (e) {
    if (e instanceof ConfigError || e instanceof RunbookError) throw new pulumi.RunError(e.message);
    throw e;
  }
}

async function planFleet() {
  const raw = pulumi.runtime.allConfig();
  const config = parseFleetConfig(raw, { secretKeys: Object.keys(raw).filter(isConfigSecret) });
  const cfg = new pulumi.Config(CONFIG_NAMESPACE);
  const cluster = await Cluster.connect({ kubeconfig: config.kubeconfig, context: config.context });
  const nodes = await resolveNodes(cluster, config);
  const connections = nodes.map((n) => connectionFor(config, n));
  // @pulumi/kubernetes (and its plugin) only for a stack that makes the RBAC or the agent. The agent first: its
  // agents' facts are what the nodes are observed by.
  const kubernetes = config.createRbac || config.agent ? await import('./rbac.js') : undefined;
  const agentMade = config.agent ? kubernetes!.createAgent(config, config.agent) : undefined;
  const { observed, awaiting } = await observeAll(cluster, config, nodes, connections);
  const names = nodes.map((n) => n.metadata.name);
  const { runs: unfinished, rebooting, targets: unfinishedTargets } = await unfinishedRuns(cluster, config.leaseNamespace, names);
  // With pendingUpgrades each node has its own targets: what apt has pending on it, or what its unfinished run planned.
  const targetsOf = (i: number): Record<string, string> => {
    const seen = observed[i];
    if (!config.pendingUpgrades) return config.targets;
    return unfinishedTargets.get(names[i]!) ?? (typeof seen === 'object' ? (seen.pending ?? {}) : {});
  };
  // A node whose unfinished run's reboot is under way cannot answer yet: its run reads it when it is back. Nor can a
  // node whose agent this stack is about to make.
  const silentRebooting = new Set(names.filter((n, i) => rebooting.has(n) && typeof observed[i] === 'string'));
  const notYet = new Set([...silentRebooting, ...awaiting]);
  const fmt = (o: ObservedNode | string) => (typeof o === 'string' ? `unknown (${o})` : Object.entries(o.installed).map(([p, v]) => `${p} ${v}`).join(', '));
  const target = config.pendingUpgrades ? `the pending upgrades${config.pendingUpgrades.origin ? ` of ${config.pendingUpgrades.origin}` : ''}` : Object.entries(config.targets).map(([p, v]) => `${p} ${v}`).join(', ');
  const packageLine = (i: number) => {
    const seen = observed[i]!;
    if (!config.pendingUpgrades) return target ? `${fmt(seen)} -> ${target}` : 'no package change';
    const from = (p: string) => (typeof seen === 'object' ? (seen.installed[p] ?? 'unknown') : 'unknown');
    const pending = Object.entries(targetsOf(i)).map(([p, v]) => `${p} ${from(p)} -> ${v}`);
    return pending.length > 0 ? `${unfinished.has(names[i]!) ? 'planned by its unfinished run' : 'pending upgrades'}: ${pending.join(', ')}` : `no pending upgrade${config.pendingUpgrades.origin ? ` of ${config.pendingUpgrades.origin}` : ''}`;
  };
  const rebootLine = (i: number) => {
    if (config.reboot.policy === 'never') return '';
    const why = rebootOf(config, observed[i]!);
    if (why) return `; reboot: ${why}`;
    return rebootUnknown(config, observed[i]!) ? "; no reboot required when its agent last read the node: `pulumi up` has its run look again (its preflight decides)" : '; no reboot required';
  };
  const auditLine = (i: number) => {
    const seen = observed[i];
    if (config.access !== 'agent' || typeof seen !== 'object') return '';
    return `; last audit: ${describeLastAudit(seen.lastAudit)}${seen.factsAt ? `; ${describeFactsAge(seen.factsAt)}` : ''}`;
  };
  const lines = nodes.map((n, i) =>
    silentRebooting.has(n.metadata.name)
      ? `${n.metadata.name}: rebooting (${unfinished.get(n.metadata.name)}: its reboot is under way; the run reads the node once it is back)`
      : awaiting.has(n.metadata.name)
        ? `${n.metadata.name}: not observed yet: this stack makes its agent (agent.image ${config.agent!.image}); \`pulumi up\` waits for its facts, and the node runs unless they show it at ${target || 'its targets'}`
        : `${n.metadata.name}: ${packageLine(i)}${rebootLine(i)}${auditLine(i)}`,
  );
  for (const line of lines.length <= 50 ? lines : [...lines.slice(0, 20), `... and ${lines.length - 20} more nodes`]) pulumi.log.info(line);
  if (config.access === 'agent') pulumi.log.info(summarizeLastAudits(nodes.flatMap((n, i) => (typeof observed[i] === 'object' ? [[n.metadata.name, observed[i].lastAudit] as [string, ObservedNode['lastAudit']]] : []))));
  const fleet = `${pulumi.getProject()}/${pulumi.getStack()}`;
  await refuseUnobserved(nodes.filter((n) => !notYet.has(n.metadata.name)), observed.filter((_, i) => !notYet.has(names[i]!)), config, fleet);
  // A version no node's sources offer fails here, in preview too, not in each node's preflight during `up`.
  // A node's own pending upgrades are offered by definition; an unfinished run's targets are its run's to finish.
  const unavailable = nodes.flatMap((n, i) => (typeof observed[i] === 'string' || config.pendingUpgrades ? [] : notOffered(n.metadata.name, observed[i] as ObservedNode, config.targets)));
  if (unavailable.length > 0) throw new ConfigError('targets', `not installable on ${unavailable.length} node(s), so no node is planned or changed: ${unavailable.join('; ')}`);

  // One list of every pod serves both the control-plane check (kube-system's static pods) and the pod counts.
  const pods = await listAll<Pod>(cluster, '/api/v1/pods', 500, slimPod);
  const controlPlane = controlPlaneNodes(pods, nodes);
  if (controlPlane.size > 0 && !config.allowControlPlane) {
    throw new ConfigError('allowControlPlane', `the fleet includes control-plane nodes (${[...controlPlane].map(([n, why]) => `${n}: ${why}`).join('; ')}); set it to true to maintain them (after the workers, one at a time), or leave them out of nodes/nodeSelector`);
  }
  // Nodes a stopped or killed `pulumi up` left half-done are out of service already: finished first, in a wave of
  // their own, before any other node and whatever their place in the order (their own runs skip the gates).
  const ordered = orderFleet({ names, order: config.order, pods: podsPerNode(pods) }).map((n) => names.indexOf(n));
  const resumed = ordered.filter((i) => unfinished.has(names[i]!));
  const rest = ordered.filter((i) => !unfinished.has(names[i]!));
  const waves = [...(resumed.length > 0 ? [resumed] : []), ...planFleetWaves(rest.filter((i) => !controlPlane.has(names[i]!)), rest.filter((i) => controlPlane.has(names[i]!)), config.maxUnavailable)];
  for (const [n, run] of unfinished) pulumi.log.info(`${n}: a stopped or killed \`pulumi up\` left ${run} on it: finished first, before any other node`);
  pulumi.log.info(`order ${describeOrder(config.order)}; waves: ${waves.map((w) => w.map((i) => names[i]).join(' + ')).join(', then ')}`);
  await logHolds(cluster, config, new Date());
  const sshKey = cfg.getSecret('sshKey');
  const changing = nodes.filter((n, i) => !atTargets(observed[i]!, targetsOf(i)) || rebootOf(config, observed[i]!) !== undefined || rebootUnknown(config, observed[i]!) !== undefined || unfinished.has(n.metadata.name)).map((n) => n.metadata.name);
  // A node a blocking pod holds now is said in the preview, with what `up` will do (a half-done node skips the wait).
  if (config.blockingPods) for (const line of await blockingPodsPlan(cluster, changing.filter((n) => !unfinished.has(n)), config.blockingPods, config.undrainable)) pulumi.log.info(line);
  const waveNames = waves.map((w) => w.map((i) => names[i]!));
  // kured's idea: pods evicted meanwhile prefer nodes that are not to be drained next.
  const waitingNodes = config.preferNoScheduleWhileWaiting ? changing : [];
  // A taint a killed `pulumi up` left on a node this one does not maintain goes now (the others' go as they end).
  const stale = nodes.filter((n) => !waitingNodes.includes(n.metadata.name) && hasWaitingTaint(n, fleet)).map((n) => n.metadata.name);
  if (stale.length > 0 && !pulumi.runtime.isDryRun()) await Promise.all(stale.map((n) => setWaitingTaint(cluster, n, fleet, false)));
  if (waitingNodes.length > 0) {
    if (!pulumi.runtime.isDryRun()) await Promise.all(waitingNodes.map((n) => setWaitingTaint(cluster, n, fleet, true)));
    pulumi.log.info(`${pulumi.runtime.isDryRun() ? 'would taint' : 'tainted'} ${waitingNodes.join(', ')} ${WAITING_TAINT_KEY}=${waitingTaintValue(fleet)}:PreferNoSchedule until each one's run ends (preferNoScheduleWhileWaiting)`);
  }
  if (!pulumi.runtime.isDryRun() && changing.length > 0) await postMessage(config.webhook, fleetStarted(fleet, { changing, targets: config.targets, waves: waveNames, ...(config.pendingUpgrades ? { what: `take ${target}` } : {}) }), (l) => pulumi.log.warn(l));
  const timeoutMinutes = nodeTimeoutMinutes(config);
  const timeout = `${timeoutMinutes}m`;
  // A stack that makes the RBAC: its nodes' runbooks then hold only that, a token of its ServiceAccount, outliving
  // the node's run.
  const runAs = config.createRbac && { namespace: config.leaseNamespace, name: SERVICE_ACCOUNT, seconds: timeoutMinutes * 60 + 600 };
  const changes = new Set(changing);
  const later = laterNodes(waveNames.map((w) => w.filter((n) => changes.has(n))));
  // The first wave waits for the least-privilege objects and the agent when the stack makes them.
  let previous: pulumi.Resource[] = [...(config.createRbac ? [kubernetes!.createRbac(config)] : []), ...(agentMade ? [agentMade] : [])];
  const resources: Record<string, NodeRuntimeUpgrade> = {};
  for (const [w, wave] of waves.entries()) {
    previous = wave.map((i) => {
      const name = nodes[i]!.metadata.name;
      const seen = observed[i];
      return (resources[name] = new NodeRuntimeUpgrade(
        name,
        {
          node: name,
          connection: connections[i]!,
          kubeconfig: config.kubeconfig,
          context: config.context,
          targets: targetsOf(i),
          ...(config.pendingUpgrades ? { pendingUpgrades: config.pendingUpgrades } : {}),
          reboot: config.reboot,
          ...(config.blockingPods ? { blockingPods: config.blockingPods } : {}),
          ...(waitingNodes.length > 0 ? { waitingTaint: true } : {}),
          ...(rebootOf(config, seen!) ? { rebootWanted: rebootOf(config, seen!) } : {}),
          ...(rebootUnknown(config, seen!) ? { rebootUnknown: rebootUnknown(config, seen!) } : {}),
          drain: config.drain,
          leaseNamespace: config.leaseNamespace,
          allowControlPlane: config.allowControlPlane,
          allowNoRollback: config.allowNoRollback,
          undrainable: config.undrainable,
          gates: config.gates,
          // No wave waits for the last one.
          soakSeconds: w < waves.length - 1 ? config.gates.soakSeconds : 0,
          hooks: config.hooksSecret ? (pulumi.secret(config.hooks) as unknown as typeof config.hooks) : config.hooks,
          hooksSecret: config.hooksSecret,
          fleet,
          wave: w,
          later: later[w]!,
          ...(config.metrics ? { textfileDir: config.metrics.textfileDir } : {}),
          ...(config.maintenanceWindow ? { maintenanceWindow: config.maintenanceWindow } : {}),
          ...(runAs ? { runAs } : {}),
          ...(typeof seen === 'object' ? { observed: seen.installed } : {}),
          ...(unfinished.has(name) ? { unfinished: unfinished.get(name)! } : {}),
          ...(sshKey ? { sshKey } : {}),
          ...(config.webhook ? { webhook: pulumi.secret(config.webhook) } : {}),
        },
        { dependsOn: previous, customTimeouts: { create: timeout, update: timeout } },
      ));
    });
  }
  const skipped = skippedNodes(resources);
  const held = heldNodes(resources);
  return {
    // The waves the nodes last ran in, from their outputs: a `pulumi up` that changes nothing changes no output either.
    waves: ranWaves(resources),
    skipped,
    held,
    // Resolves once every node is done: the fleet's end, told to the webhook when this `pulumi up` changed nodes. A
    // failed node ends the program (the engine stops it), so a failed fleet's end is told by the provider instead.
    finished: fleetEnd(resources, { skipped, held }, { fleet, webhook: changing.length > 0 ? config.webhook : undefined, changing }),
    nodes: Object.fromEntries(
      Object.entries(resources).map(([name, r]) => [name, { result: r.result, versionsBefore: r.versionsBefore, versionsAfter: r.versionsAfter, durationMs: r.durationMs, audit: r.audit }]),
    ),
  };
}
