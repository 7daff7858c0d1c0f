import { getNode } from '../cluster/nodes.js';
import { isPodReady } from '../cluster/pods.js';
import { deletePod, createPod, getPod, podEvents, smokePodManifest, smokePodName } from '../cluster/smoke-pod.js';
import { readCalicoView } from '../leaks/calico/index.js';
import { describeCalicoAllocation, liveCalicoAllocation, stillAllocatedTo } from '../leaks/calico/proof.js';
import { liveness } from '../leaks/liveness.js';
import { liveAllocation } from '../leaks/whereabouts/detect.js';
import { whereaboutsRanges } from '../leaks/whereabouts/ranges.js';
import { readWhereaboutsView } from '../leaks/whereabouts/read.js';
import { canonicalIp } from '../node/cni/host-local.js';
import { hasDebianRevision, reportedRuntimeAtTargets } from '../node/runtime/binaries.js';
import { criDockerdCommandLine, flagValue, kubeletCommandLine } from '../node/state/command-lines.js';
import type { NodeState } from '../node/state/types.js';
import { run } from '../node/transport/index.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';
import { smokeNamespaceOf } from '../runbook/options.js';
import { waitUntil } from '../wait.js';
import { cleanSummary, settledAudit } from '../runbook/proof.js';
import { expectAtTargets } from './upgrade-runtime.js';

export interface ProvePlan extends StepPlan {
  smokePod: string;
}

/** The image the node's runtime uses for sandboxes (so it is there without a pull): flag, runtime config, default. */
async function sandboxImage(ctx: RunContext, state: NodeState): Promise<string> {
  const fromFlag = flagValue(criDockerdCommandLine(state), 'pod-infra-container-image') ?? flagValue(kubeletCommandLine(state), 'pod-infra-container-image');
  if (fromFlag) return fromFlag;
  const info = await run(ctx.reader, `crictl info 2>/dev/null | grep -o '"sandboxImage": *"[^"]*"' | head -n1 | cut -d'"' -f4 || true`).catch(() => '');
  return info.trim() || 'registry.k8s.io/pause:3.10';
}

/**
 * Where the node's IPAM recorded this IP for a live sandbox (not just a pod's claim): host-local's file, the entry
 * of whereabouts' IPPool for this pod, or calico-ipam's allocation in its block (its handle names the sandbox);
 * undefined while there is none.
 */
async function liveAllocationOf(ctx: RunContext, podRef: string, ip: string): Promise<string | undefined> {
  const state = await ctx.nodeState({ fresh: true });
  const live = liveness(state, []);
  const { ipam } = await ctx.network();
  if (ipam === 'whereabouts') {
    const view = await readWhereaboutsView(ctx.cluster, whereaboutsRanges(state));
    const a = view && liveAllocation(view, live, podRef, ip);
    return a && `allocated in whereabouts pool ${a.namespace}/${a.pool} to live sandbox ${a.containerId.slice(0, 12)}`;
  }
  if (ipam === 'calico-ipam') {
    const view = await readCalicoView(ctx.cluster, ctx.options.node);
    const a = view && liveCalicoAllocation(view, live, ctx.options.node, podRef, ip);
    return a && describeCalicoAllocation(a, ctx.options.node);
  }
  const r = state.ipam.flatMap((d) => d.reservations).find((x) => canonicalIp(x.ip) === canonicalIp(ip));
  return r && (live.sandboxIds.has(r.containerId) || live.attachedContainers.has(r.containerId)) ? `reserved in ${r.path}` : undefined;
}

/**
 * Proves the node before it takes pods: a smoke pod pinned to it must get a sandbox and an IP that the node's IPAM
 * (host-local's files, whereabouts' IPPools, calico-ipam's blocks) has allocated to a live sandbox, then be torn down
 * by the runtime (calico-ipam's allocation released); then the leak audit must come back clean. A failed
 * proof before uncordon is rolled back; leaks hold the node cordoned (a downgrade would not free them).
 */
export const proveNode: Step<ProvePlan> = {
  name: 'prove-node',
  title: 'Prove the node before it takes pods',
  undo: 'delete the smoke pod',
  alwaysApply: true,
  async plan(ctx) {
    const name = smokePodName(ctx.runId);
    return {
      smokePod: `${smokeNamespaceOf(ctx.options)}/${name}`,
      actions: [`start smoke pod ${smokeNamespaceOf(ctx.options)}/${name} on ${ctx.options.node}: a sandbox and an IP with a live reservation`, 'delete it', "check the runtime version the node reports (kubelet's nodeInfo)", 'audit the node for leaks'],
      summary: 'will prove the node with a smoke pod and the leak audit',
    };
  },
  async apply(ctx) {
    const { options } = ctx;
    const namespace = smokeNamespaceOf(options);
    const name = smokePodName(ctx.runId);
    // A resumed run trusts the journal for steps done; the node itself must still be at the targets (re-imaged?).
    await expectAtTargets(ctx);
    // The state expectAtTargets just read.
    const image = await sandboxImage(ctx, await ctx.nodeState());
    // A smoke pod left by a killed attempt is replaced: this attempt proves the node now.
    await removeSmokePod(ctx);
    const pod = await createPod(ctx.cluster, smokePodManifest({ name, namespace, node: options.node, image, runId: ctx.runId }));
    let proof = '';
    let smokeIp = '';
    try {
      await waitUntil(
        `smoke pod ${namespace}/${name} to get a sandbox and an IP`,
        async () => {
          const now = await getPod(ctx.cluster, namespace, name);
          const ip = now?.status?.podIP;
          if (!now || now.status?.phase === 'Failed') return `pod ${now?.status?.phase ?? 'gone'}`;
          if (!ip || now.status?.phase !== 'Running') return `phase ${now.status?.phase ?? 'Pending'}, no IP yet`;
          if (options.proof === 'network-only') {
            if (!isPodReady(now)) return `IP ${ip}, not Ready yet`;
            proof = `IP ${ip} and Ready (network-only proof: the IPAM ${(await ctx.network()).ipam || '(unknown)'} was not checked)`;
            return true;
          }
          const allocation = await liveAllocationOf(ctx, `${namespace}/${name}`, ip);
          if (!allocation) return `IP ${ip}, but no allocation to a live sandbox for it yet (${(await ctx.network()).ipam})`;
          proof = `IP ${ip}, ${allocation}`;
          smokeIp = ip;
          return true;
        },
        { timeoutMs: options.smokeTimeoutSeconds * 1000, intervalMs: 1_000, onChange: (seen) => ctx.progress(`smoke pod: ${seen}`), signal: ctx.stop },
      );
    } catch (e) {
      const events = await podEvents(ctx.cluster, pod).catch(() => []);
      throw new Error(`${(e as Error).message}${events.length ? `; events: ${events.join(' | ')}` : ''}`);
    }
    ctx.progress(`smoke pod: ${proof}; deleting it`);
    await removeSmokePod(ctx);
    if (smokeIp && (await ctx.network()).ipam === 'calico-ipam') proof += `, ${await calicoReleased(ctx, `${namespace}/${name}`, smokeIp)}`;
    const reported = await nodeReportsTargets(ctx);
    const report = await settledAudit(ctx);
    return `smoke pod got ${proof}; ${reported}; audit ${cleanSummary(report)}`;
  },
  async verify() {},
  async rollback(ctx) {
    await removeSmokePod(ctx);
    return 'smoke pod removed';
  },
};

/** The smoke pod's address given back by the plugin's DEL (calico-ipam releases by the sandbox's handle). */
async function calicoReleased(ctx: RunContext, podRef: string, ip: string): Promise<string> {
  await waitUntil(
    `calico-ipam to release ${ip} of the smoke pod`,
    async () => {
      const view = await readCalicoView(ctx.cluster, ctx.options.node);
      return view && !stillAllocatedTo(view, podRef, ip) ? true : `${ip} still allocated to ${podRef}`;
    },
    { timeoutMs: 60_000, intervalMs: 1_000, signal: ctx.stop },
  );
  return 'released by calico-ipam after';
}

/** kubelet's own report of the runtime it talks to must reach the targets (its next status sync may take a while). */
async function nodeReportsTargets(ctx: RunContext): Promise<string> {
  let reported: string | undefined;
  await waitUntil(
    `node ${ctx.options.node} to report the target runtime version`,
    async () => {
      reported = (await getNode(ctx.cluster, ctx.options.node)).status?.nodeInfo?.containerRuntimeVersion;
      const seen = reportedRuntimeAtTargets(reported, ctx.options.targets);
      return seen.status === 'differs' ? seen.message : true;
    },
    { timeoutMs: 60_000, intervalMs: 2_000, onChange: (seen) => ctx.progress(seen), signal: ctx.stop },
  );
  const last = reportedRuntimeAtTargets(reported, ctx.options.targets);
  if (last.status === 'unreported') return `${last.message}: the daemon's own version was checked instead`;
  // A run that upgraded nothing (a reboot alone) has no upgraded runtime to name.
  const upgradedNothing = Object.keys(ctx.options.targets).length === 0;
  if (!(last.status === 'matches' || upgradedNothing)) return `the node reports ${reported} (not the upgraded runtime)`;
  const revision = Object.values(ctx.options.targets).some(hasDebianRevision);
  return `the node reports ${reported}${revision ? " (kubelet's report names the upstream release, never the Debian revision)" : ''}`;
}

/** Deletes the smoke pod and waits until it is gone, so its teardown is part of what the audit then checks. */
async function removeSmokePod(ctx: RunContext): Promise<void> {
  const namespace = smokeNamespaceOf(ctx.options);
  const name = smokePodName(ctx.runId);
  if (!(await getPod(ctx.cluster, namespace, name))) return;
  await deletePod(ctx.cluster, namespace, name);
  await waitUntil(`smoke pod ${namespace}/${name} to go`, async () => ((await getPod(ctx.cluster, namespace, name)) ? 'still terminating' : true), {
    timeoutMs: 120_000,
    intervalMs: 1_000,
    signal: ctx.stop,
  });
}
