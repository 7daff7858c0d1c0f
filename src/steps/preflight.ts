import { blockMessage, budgetBlocks } from '../cluster/drain/budgets.js';
import { graceOutlastsTimeout, planDrain } from '../cluster/drain/plan.js';
import { pinningControllers } from '../cluster/drain/pinned.js';
import { controlPlaneRefusal, listControlPlanePods } from '../cluster/control-plane.js';
import { getNode, isControlPlane, isReady, podCidr, readyMessage } from '../cluster/nodes.js';
import { listPodsOnNode } from '../cluster/pods.js';
import { listAll } from '../cluster/list.js';
import type { PodDisruptionBudget } from '../cluster/types.js';
import { RunbookError } from '../errors.js';
import {
  availableVersionsScript, brokenPackages, cachedDebsScript, changedAlongside, LOCK_HOLDERS_SCRIPT, lockMessage, parseAvailableVersions, parseInstallSimulation, parsePackageDb, simulateInstallScript,
} from '../node/packages/index.js';
import { notRunningFromPackage, runningBinaries } from '../node/runtime/binaries.js';
import { detectFlavor, servicesOfUpgrade } from '../node/runtime/flavor.js';
import { ipamRefusal } from '../node/cni/network-mode.js';
import { hasWhereabouts, WHEREABOUTS_GROUP } from '../leaks/whereabouts/read.js';
import { CALICO_GROUP, hasCalico } from '../leaks/calico/index.js';
import type { NodeState } from '../node/state/types.js';
import { run } from '../node/transport/index.js';
import { finishedEarlier, type PriorState } from '../runbook/journal.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';
import { waitUntil, WaitTimedOut } from '../wait.js';
import { planTeardown } from './teardown-sandboxes.js';
import { rebootReason } from './reboot.js';

export interface PreflightPlan extends StepPlan {
  prior: PriorState;
  /** False when the runtime is already at the target versions and running: every later step has nothing to do. */
  maintenanceNeeded: boolean;
}

const refuse = (message: string) => new RunbookError('preflight', message);

/** Everything that could stop the run is checked here, before anything changes (and again when a run resumes). */
export const preflight: Step<PreflightPlan> = {
  name: 'preflight',
  title: 'Preflight checks',
  undo: 'nothing to undo: it only looks',
  async plan(ctx) {
    const { options, journal } = ctx;
    const pending = (step: string) => !ctx.resuming || !finishedEarlier(journal, step);
    const node = await getNode(ctx.cluster, options.node);
    const state = await ctx.nodeState();
    const flavor = detectFlavor(state);
    const net = await ctx.network();
    if (flavor === 'unknown') throw refuse(`no container runtime found on ${options.node} (no cri-docker, docker or containerd unit)`);
    if (!state.packageManager) throw refuse(`${options.node} has no apt-get and dpkg: only Debian and Ubuntu nodes are supported (RPM-based nodes are not)`);
    if (state.kubeletUnit && state.kubeletUnit.unit === null) {
      throw refuse(`kubelet runs on ${options.node} (PID ${state.kubeletUnit.pid}) outside any systemd service (cgroup ${state.kubeletUnit.cgroup || 'unknown'}): node-maint stops and starts kubelet through its unit, and could not stop this one; run kubelet under a systemd unit`);
    }
    if (state.kubeletUnit?.transient && !ctx.resuming) {
      throw refuse(`kubelet runs on ${options.node} as the transient unit ${state.kubeletUnit.unit}.service (systemd-run: no unit file): once node-maint stopped it, nothing could start it again; run kubelet under a unit file (/etc/systemd/system or /lib/systemd/system)`);
    }
    // A resumed run finds kubelet stopped and the node NotReady: that is our doing, not a reason to stop.
    if (!ctx.resuming && !isReady(node)) throw new RunbookError('nodeNotReady', `node ${options.node} is not Ready: ${readyMessage(node)}`);
    const controlPlane = isControlPlane(node, await listPodsOnNode(ctx.cluster, options.node));
    if (controlPlane && !options.allowControlPlane) {
      throw refuse(`${options.node} is a control-plane node (${controlPlane}): its teardown stops etcd and the apiserver's static pods; give --allow-control-plane to maintain it (one at a time, after the workers)`);
    }
    const cutsOff = controlPlaneRefusal({ node, server: ctx.cluster.server, staticPods: await listControlPlanePods(ctx.cluster) });
    if (cutsOff && pending('stop-kubelet')) throw refuse(`${cutsOff}; refused whatever --allow-control-plane says (maintain it through another apiserver of an HA control plane); nothing was changed`);
    if (state.refusedDataDirs.length > 0) {
      throw refuse(`${options.node}'s CNI config names a host-local dataDir that is not a plain absolute path (${state.refusedDataDirs.map((d) => JSON.stringify(d)).join(', ')}): node-maint clears every IPAM directory it reads, so it reads none it cannot pin down; fix the config`);
    }
    if (!state.tools.has('crictl')) throw refuse(`${options.node} has no crictl: the runtime's sandboxes and network readiness could not be checked (install cri-tools)`);
    checkPackages(ctx, state);
    const varFree = state.diskFreeBytes['/var/lib'] ?? state.diskFreeBytes['/var'] ?? state.diskFreeBytes['/'] ?? 0;
    if (varFree < options.minFreeBytes) throw refuse(`${options.node} has ${Math.round(varFree / 2 ** 20)} MiB free under /var, less than ${Math.round(options.minFreeBytes / 2 ** 20)} MiB`);
    const changes = Object.entries(options.targets).filter(([p, v]) => state.packages[p] !== v);
    const packageNotes: string[] = [];
    let alongside: Record<string, string> = {};
    if (changes.length > 0 && pending('upgrade-runtime')) {
      const installable = await checkInstallable(ctx, state, changes);
      packageNotes.push(...installable.notes);
      alongside = installable.alongside;
      await checkRunsFromPackages(ctx, changes.map(([p]) => p));
    }
    const prior: PriorState = journal.prior ?? {
      unschedulable: node.spec.unschedulable === true,
      kubeletActive: state.kubeletUnit !== undefined || state.services.kubelet?.active === true,
      kubeletUnit: state.kubeletUnit?.unit ?? 'kubelet',
      packages: Object.fromEntries(Object.keys(options.targets).map((p) => [p, state.packages[p]!])),
      ...(Object.keys(alongside).length > 0 ? { alongside } : {}),
      held: Object.entries(state.packageDb.records).filter(([, r]) => r.held).map(([p]) => p),
      runtimeServices: servicesOfUpgrade(flavor, Object.keys(options.targets)).filter((u) => state.services[u]?.active),
      flavor,
      networkMode: net.mode,
    };
    const runtimeDown = prior.runtimeServices.some((u) => !state.services[u]?.active);
    const reboot = pending('reboot-node') ? await rebootReason(ctx) : undefined;
    const maintenanceNeeded = ctx.resuming || changes.length > 0 || runtimeDown || reboot !== undefined;
    const notes: string[] = [];
    if (maintenanceNeeded) {
      const unreadable = ipamRefusal(options.node, net, options.proof);
      if (unreadable && pending('prove-node')) throw refuse(unreadable);
      // An IPAM whose records live in the API must find them there, or the proof could never pass.
      const apiIpam = { whereabouts: [WHEREABOUTS_GROUP, hasWhereabouts], 'calico-ipam': [CALICO_GROUP, hasCalico] } as const;
      const served = apiIpam[net.ipam as keyof typeof apiIpam];
      if (served && options.proof === 'ipam' && pending('prove-node') && !(await served[1](ctx.cluster))) {
        throw refuse(`${options.node}'s CNI network ${net.networkName} allocates pod IPs with ${net.ipam}, but the cluster serves no ${served[0]}: its allocations cannot be read (give --proof network-only to maintain it with the weaker proof)`);
      }
      if (pending('upgrade-runtime')) notes.push(...(await waitForPackageLock(ctx, state)));
      if (pending('teardown-sandboxes')) checkReplayable(ctx, state, podCidr(node));
      if (pending('drain')) notes.push(await checkDrainable(ctx));
    }
    const summary = [
      `${flavor}+${net.mode}${net.ipam ? ` (IPAM ${net.ipam})` : ''}`,
      ...(prior.kubeletUnit && prior.kubeletUnit !== 'kubelet' ? [`kubelet runs as ${prior.kubeletUnit}.service`] : []),
      ...(options.proof === 'network-only' ? ['proof: network only (the IPAM is not checked)'] : []),
      ...Object.entries(options.targets).map(([p, v]) => `${p} ${state.packages[p] || 'not cleanly installed'} -> ${v}`),
      ...(reboot ? [`reboot: ${reboot}`] : options.reboot === 'if-required' && !ctx.resuming ? ['no reboot required'] : []),
      ...(prior.held.length > 0 ? [`held: ${prior.held.join(', ')} (kept)`] : []),
      ...packageNotes,
      ...(controlPlane ? [`control plane (${controlPlane}), allowed`] : []),
      maintenanceNeeded ? (ctx.resuming ? 'resuming an unfinished run' : 'ready to start') : Object.keys(options.targets).length > 0 ? 'already at target' : 'nothing to do',
      ...notes.filter(Boolean),
    ].join(', ');
    return { actions: [], summary, prior, maintenanceNeeded, detail: { flavor, network: net, prior, controlPlane } };
  },
  async apply() {},
  async verify() {},
};

/**
 * The target packages are installed, and dpkg is sound. A half-installed package or an interrupted dpkg that this
 * run did not cause is refused (someone else's dpkg run, to be looked at); one a killed run of ours left is repaired
 * by the upgrade step, which completes the interrupted dpkg and installs again.
 */
function checkPackages(ctx: RunContext, state: NodeState): void {
  const { options } = ctx;
  const db = state.packageDb;
  const missing = Object.keys(options.targets).filter((p) => !db.records[p] || db.records[p]!.status === 'not-installed' || db.records[p]!.status === 'config-files');
  if (missing.length > 0) throw refuse(`${missing.join(', ')} not installed on ${options.node} (installed: ${Object.entries(state.packages).map(([p, v]) => `${p} ${v}`).join(', ') || 'none of the runtime packages'})`);
  const ours = ctx.resuming && ctx.journal.steps['upgrade-runtime'] !== undefined;
  const broken = brokenPackages(db);
  if (!ours && (broken.length > 0 || db.interrupted)) {
    throw refuse(`dpkg on ${options.node} is not in a sound state (${[...(db.interrupted ? ['an interrupted dpkg run'] : []), ...broken].join(', ')}), and not by this tool: look at it, run \`dpkg --configure -a\` on the node, then run again`);
  }
}

/** Each package to change provides the daemon that runs now: else the upgrade would change a file nothing runs. */
async function checkRunsFromPackages(ctx: RunContext, packages: string[]): Promise<void> {
  const problems = notRunningFromPackage(packages, await runningBinaries(ctx.reader, packages));
  if (problems.length > 0) throw refuse(`${problems.join('; ')} (on ${ctx.options.node})`);
}

/**
 * The targets can be installed, apt's plan for them removes nothing, and the versions installed now can be had again
 * for a rollback (from the sources or apt's cache: archives keep only the newest point release). Notes for the plan.
 */
async function checkInstallable(ctx: RunContext, state: NodeState, changes: Array<[string, string]>): Promise<{ notes: string[]; alongside: Record<string, string> }> {
  const { options } = ctx;
  const available = parseAvailableVersions(await run(ctx.reader, availableVersionsScript(changes.map(([p]) => p))));
  const unavailable = changes.filter(([p, v]) => !available.get(p)?.has(v));
  if (unavailable.length > 0) {
    throw refuse(unavailable.map(([p, v]) => `${p} ${v} is not available from ${options.node}'s package sources (available: ${[...(available.get(p) ?? [])].join(', ') || 'none'})`).join('; '));
  }
  // A run resumed after its own install began passed these checks then, and apt cannot simulate over the dpkg it
  // left interrupted: the upgrade step repairs dpkg first, and rolls back from the .debs it kept.
  if (ctx.journal.steps['upgrade-runtime'] !== undefined) return { notes: [], alongside: {} };
  const simulated = await ctx.reader.exec(simulateInstallScript(Object.fromEntries(changes)), { timeoutMs: options.commandTimeoutSeconds * 1000 });
  if (simulated.code !== 0) {
    const said = simulated.stdout.split('\n').filter((l) => /^E:|^ /.test(l)).slice(-6).join(' | ');
    throw refuse(`apt cannot plan the install of ${changes.map(([p, v]) => `${p} ${v}`).join(', ')} on ${options.node} (apt-get -s exited ${simulated.code}: ${said || 'no reason given'}); nothing was changed`);
  }
  const simulation = parseInstallSimulation(simulated.stdout);
  if (simulation.removals.length > 0) {
    throw refuse(`installing ${changes.map(([p, v]) => `${p} ${v}`).join(', ')} on ${options.node} would remove ${simulation.removals.map((r) => `${r.name} ${r.version}`.trim()).join(', ')} (apt-get -s): node-maint never removes packages; resolve the conflict by hand or choose targets that keep them`);
  }
  // What apt upgrades alongside the targets (a newer runc): kept and put back by a rollback as the targets are.
  const alongside = changedAlongside(simulation, options.targets);
  if (Object.keys(alongside).length > 0) {
    for (const [p, versions] of parseAvailableVersions(await run(ctx.reader, availableVersionsScript(Object.keys(alongside))))) available.set(p, versions);
  }
  const priors: Record<string, string> = { ...alongside, ...Object.fromEntries(changes.map(([p]) => [p, state.packages[p] ?? '']).filter(([, v]) => v !== '')) };
  const cached = new Set((await run(ctx.reader, cachedDebsScript(priors))).split('\n').filter(Boolean));
  const lost = Object.entries(priors).filter(([p, v]) => !available.get(p)?.has(v) && !cached.has(p));
  if (lost.length > 0 && !options.allowNoRollback) {
    throw refuse(`${lost.map(([p, v]) => `${p} ${v}`).join(', ')}, installed now, is no longer in ${options.node}'s package sources nor in apt's cache: a rollback would have nothing to install. Put its .deb in /var/cache/apt/archives on the node, or give --allow-no-rollback to go on without a rollback path`);
  }
  return {
    notes: [
      `apt: ${simulation.changes.map((c) => `${c.name} ${c.from || '(new)'} -> ${c.to}`).join(', ')}`,
      ...(Object.keys(alongside).length > 0 ? [`kept for a rollback too: ${Object.entries(alongside).map(([p, v]) => `${p} ${v}`).join(', ')}`] : []),
      ...(lost.length > 0 ? [`no rollback path for ${lost.map(([p, v]) => `${p} ${v}`).join(', ')} (--allow-no-rollback)`] : []),
    ],
    alongside,
  };
}

/** Another process's apt or dpkg (unattended-upgrades) is waited for, up to --lock-timeout, then refused. */
async function waitForPackageLock(ctx: RunContext, state: NodeState): Promise<string[]> {
  if (state.packageDb.lockHolders.length === 0) return [];
  const { options } = ctx;
  if (options.dryRun) return [`the dpkg lock is held by ${lockMessage(state.packageDb)}: the run would wait up to ${options.lockTimeoutSeconds}s for it`];
  try {
    await waitUntil(
      `the dpkg lock on ${options.node}`,
      async () => {
        const db = parsePackageDb([], (await run(ctx.reader, LOCK_HOLDERS_SCRIPT)).split('\n').filter(Boolean), false);
        return db.lockHolders.length === 0 ? true : `held by ${lockMessage(db)}`;
      },
      { timeoutMs: options.lockTimeoutSeconds * 1000, intervalMs: 2_000, onChange: (seen) => ctx.progress(`waiting for the dpkg lock: ${seen}`), signal: ctx.stop },
    );
  } catch (e) {
    // A stop (or a node that stops answering) is said as what it is, not as a lock held too long.
    if (!(e instanceof WaitTimedOut)) throw e;
    throw refuse(`the dpkg lock on ${options.node} was not released in ${options.lockTimeoutSeconds}s (${(e as Error).message.split(': ').pop()}); nothing was changed. Let that apt finish (or raise --lock-timeout) and run again`);
  }
  return ['dpkg lock free'];
}

/** A cache entry the teardown could not replay would leak: found now, before the drain, not in step 5 after it. */
function checkReplayable(ctx: RunContext, state: NodeState, cidr: string | undefined): void {
  const { unreplayable } = planTeardown(state, cidr);
  if (unreplayable.length > 0) {
    throw refuse(`${unreplayable.length} CNI cache entr(ies) on ${ctx.options.node} cannot be replayed, so their IPs would leak: ${unreplayable.slice(0, 5).map((u) => `${u.entryPath} (${u.reason})`).join('; ')}. Restore the network's config, or release them with audit-node --reclaim, then run again`);
  }
}

/**
 * The drain would succeed: no pod it would refuse, no grace period longer than the drain's timeout, and the
 * PodDisruptionBudgets allow every eviction. A budget at zero only for now (its pods are being replaced elsewhere,
 * as in a fleet's next wave) is waited for, up to --budget-wait; one that forbids every disruption refuses at once.
 */
async function checkDrainable(ctx: RunContext): Promise<string> {
  const { options } = ctx;
  let said = '';
  let pinsAsked = false;
  await waitUntil(
    'PodDisruptionBudgets to allow the drain',
    async () => {
      const plan = await planDrain(ctx.cluster, options.node, options.drain);
      if (plan.refused) throw refuse(`drain would fail: ${plan.refused}`);
      const slow = graceOutlastsTimeout(plan.evict, options.drain);
      if (slow.length > 0) throw refuse(`drain would time out: the grace period of ${slow.join(', ')} is not shorter than --timeout ${options.drain.timeoutSeconds}s; raise --timeout or give a shorter --grace-period`);
      const pinning = pinsAsked ? [] : await pinningControllers(ctx.cluster, options.node, plan.evict);
      pinsAsked = true;
      if (pinning.length > 0) throw refuse(`drain would not end: ${pinning.join(', ')} put evicted pods straight back on ${options.node}; change the controller (or scale it down), then run again`);
      // Only the namespaces of the pods to evict: a budget covers pods of its own namespace.
      const namespaces = [...new Set(plan.evict.map((p) => p.metadata.namespace ?? 'default'))];
      const budgets = (await Promise.all(namespaces.map((ns) => listAll<PodDisruptionBudget>(ctx.cluster, `/apis/policy/v1/namespaces/${encodeURIComponent(ns)}/poddisruptionbudgets`)))).flat();
      const blocks = budgetBlocks(plan.evict, budgets);
      if (blocks.length === 0) return true;
      if (blocks.some((b) => b.permanent)) {
        throw new RunbookError('blockedByBudget', `PodDisruptionBudgets block the drain of ${options.node}: ${blockMessage(blocks)}`, { details: blocks });
      }
      said = blockMessage(blocks);
      // The dry run says what the run would wait for, without waiting.
      return options.dryRun ? true : said;
    },
    { timeoutMs: options.budgetWaitSeconds * 1000, intervalMs: 2_000, onChange: (seen) => ctx.progress(`waiting for budgets: ${seen}`), signal: ctx.stop },
  ).catch((e) => {
    if (e instanceof RunbookError) throw e;
    throw new RunbookError('blockedByBudget', `PodDisruptionBudgets block the drain of ${options.node} after ${options.budgetWaitSeconds}s: ${said}`);
  });
  return options.dryRun && said ? `the run would wait up to ${options.budgetWaitSeconds}s for budgets: ${said}` : 'budgets allow the drain';
}
