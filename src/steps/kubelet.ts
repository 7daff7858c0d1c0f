import { getNode, isReady, podCidr, readyMessage } from '../cluster/nodes.js';
import { parseUnitStates, startUnitsScript, stopUnitsScript, unitStatesScript } from '../node/units.js';
import { run } from '../node/transport/index.js';
import { earlierStepActs, type RunContext, type Step } from '../runbook/step.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function kubeletActive(ctx: RunContext): Promise<boolean> {
  return parseUnitStates(await run(ctx.transport, unitStatesScript(['kubelet']))).get('kubelet') === true;
}

/** Kubelet stopped, so nothing recreates sandboxes or runs garbage collection while the node is worked on. */
export const stopKubelet: Step = {
  name: 'stop-kubelet',
  title: 'Stop kubelet',
  async plan(ctx) {
    if (!(await kubeletActive(ctx))) return { actions: [], summary: 'kubelet is not running' };
    return { actions: ['systemctl stop kubelet'], summary: 'will stop kubelet' };
  },
  async apply(ctx) {
    await run(ctx.transport, stopUnitsScript(['kubelet']), { timeoutMs: 120_000 });
    return 'kubelet stopped';
  },
  async verify(ctx) {
    // The unit may report inactive while the process lingers; wait until no kubelet process is left.
    for (let i = 0; i < 60; i++) {
      const out = await run(ctx.transport, `${unitStatesScript(['kubelet'])}; pidof kubelet >/dev/null && echo running || true`);
      if (!parseUnitStates(out).get('kubelet') && !out.includes('running')) return;
      await sleep(500);
    }
    throw new Error('kubelet is still running');
  },
  async rollback(ctx) {
    if (!ctx.journal.prior?.kubeletActive) return 'kubelet was not running before the run';
    await run(ctx.transport, startUnitsScript(['kubelet']), { timeoutMs: 120_000 });
    return 'kubelet started';
  },
};

/** Runtime network readiness as the runtime reports it (crictl info), where crictl is installed. */
const NETWORK_READY_SCRIPT = `if command -v crictl >/dev/null 2>&1; then crictl info 2>/dev/null | tr -d ' \\n' | grep -q '"type":"NetworkReady","status":true' && echo ready || echo not-ready; else echo unknown; fi`;

/** Starts kubelet and waits for the PodCIDR, Ready and the runtime's NetworkReady, so uncordon never comes too early. */
export const startKubelet: Step = {
  name: 'start-kubelet',
  title: 'Start kubelet',
  async plan(ctx) {
    const starting = ctx.options.dryRun ? earlierStepActs(ctx, 'stop-kubelet') || !(await kubeletActive(ctx)) : !(await kubeletActive(ctx));
    const wait = 'wait for PodCIDR, Ready and the runtime network';
    return { actions: starting ? ['systemctl start kubelet', wait] : [wait], summary: starting ? 'will start kubelet and wait' : 'kubelet running; will wait for readiness' };
  },
  async apply(ctx, plan) {
    if (plan.actions.includes('systemctl start kubelet')) await run(ctx.transport, startUnitsScript(['kubelet']), { timeoutMs: 120_000 });
    return waitUntilNodeReady(ctx);
  },
  async verify(ctx) {
    const node = await getNode(ctx.cluster, ctx.options.node);
    if (!podCidr(node) || !isReady(node)) throw new Error(`${ctx.options.node} is not Ready with a PodCIDR: ${readyMessage(node)}`);
  },
};

export async function waitUntilNodeReady(ctx: RunContext): Promise<string> {
  const deadline = Date.now() + ctx.options.readyTimeoutSeconds * 1000;
  let last = '';
  for (;;) {
    const node = await getNode(ctx.cluster, ctx.options.node);
    const cidr = podCidr(node);
    const network = (await run(ctx.transport, NETWORK_READY_SCRIPT)).trim();
    const status = `PodCIDR ${cidr ?? 'none'}, Ready ${readyMessage(node)}, runtime network ${network}`;
    if (cidr && isReady(node) && network !== 'not-ready') return status;
    if (status !== last) ctx.progress(`waiting: ${status}`);
    last = status;
    if (Date.now() > deadline) throw new Error(`${ctx.options.node} did not become ready in ${ctx.options.readyTimeoutSeconds}s: ${status}`);
    await sleep(1_000);
  }
}
