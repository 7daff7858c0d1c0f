import { installScript, refreshScript, availableVersionsScript, parseAvailableVersions } from '../node/packages/index.js';
import { runtimeUnits } from '../node/runtime/flavor.js';
import { parseUnitStates, startUnitsScript, stopUnitsScript, unitStatesScript } from '../node/units.js';
import { run } from '../node/transport/index.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';

export interface UpgradePlan extends StepPlan {
  install: Record<string, string>;
  units: string[];
}

async function installedVersions(ctx: RunContext, packages: string[]): Promise<Record<string, string>> {
  const state = await ctx.nodeState({ fresh: true });
  return Object.fromEntries(packages.map((p) => [p, state.packages[p] ?? '']));
}

async function activeUnits(ctx: RunContext, units: string[]): Promise<Map<string, boolean>> {
  return parseUnitStates(await run(ctx.transport, unitStatesScript(units)));
}

/** Stops the runtime, installs exact versions through the node's package manager, starts it again. */
async function install(ctx: RunContext, versions: Record<string, string>, units: string[]): Promise<void> {
  const state = await ctx.nodeState();
  const manager = state.packageManager!;
  const timeoutMs = ctx.options.commandTimeoutSeconds * 1000;
  await run(ctx.transport, stopUnitsScript([...units].reverse()), { timeoutMs });
  const available = parseAvailableVersions(await run(ctx.transport, availableVersionsScript(manager, Object.keys(versions))));
  if (Object.entries(versions).some(([p, v]) => !available.get(p)?.has(v))) await run(ctx.transport, refreshScript(manager), { timeoutMs });
  await run(ctx.transport, installScript(manager, versions), { timeoutMs });
  await run(ctx.transport, startUnitsScript(units), { timeoutMs });
}

export const upgradeRuntime: Step<UpgradePlan> = {
  name: 'upgrade-runtime',
  title: 'Upgrade the runtime',
  async plan(ctx) {
    const prior = ctx.journal.prior!;
    const units = prior.runtimeServices.length > 0 ? prior.runtimeServices : runtimeUnits(prior.flavor);
    const installed = await installedVersions(ctx, Object.keys(ctx.options.targets));
    const install = Object.fromEntries(Object.entries(ctx.options.targets).filter(([p, v]) => installed[p] !== v));
    const down = [...(await activeUnits(ctx, units))].filter(([, active]) => !active).map(([u]) => u);
    const actions = [
      ...(Object.keys(install).length > 0 ? [`stop ${[...units].reverse().join(', ')}`] : []),
      ...Object.entries(install).map(([p, v]) => `install ${p} ${installed[p]} -> ${v}`),
      ...(Object.keys(install).length > 0 || down.length > 0 ? [`start ${units.join(', ')}`] : []),
    ];
    return {
      install,
      units,
      actions,
      summary: actions.length === 0 ? 'runtime at target versions and running' : Object.entries(install).map(([p, v]) => `${p} -> ${v}`).join(', ') || `start ${down.join(', ')}`,
      detail: { from: installed, to: ctx.options.targets, units },
    };
  },
  async apply(ctx, plan) {
    await install(ctx, plan.install, plan.units);
    return Object.entries(plan.install).map(([p, v]) => `${p} ${v}`).join(', ') || 'runtime started';
  },
  async verify(ctx, plan) {
    const installed = await installedVersions(ctx, Object.keys(ctx.options.targets));
    const wrong = Object.entries(ctx.options.targets).filter(([p, v]) => installed[p] !== v);
    if (wrong.length > 0) throw new Error(`installed versions differ from the targets: ${wrong.map(([p, v]) => `${p} ${installed[p]} (want ${v})`).join(', ')}`);
    const down = [...(await activeUnits(ctx, plan.units))].filter(([, a]) => !a).map(([u]) => u);
    if (down.length > 0) throw new Error(`runtime units not running after the upgrade: ${down.join(', ')}`);
  },
  async rollback(ctx) {
    const prior = ctx.journal.prior!;
    const units = prior.runtimeServices.length > 0 ? prior.runtimeServices : runtimeUnits(prior.flavor);
    const installed = await installedVersions(ctx, Object.keys(prior.packages));
    const back = Object.fromEntries(Object.entries(prior.packages).filter(([p, v]) => installed[p] !== v));
    if (Object.keys(back).length > 0) {
      await install(ctx, back, units);
      return `reinstalled ${Object.entries(back).map(([p, v]) => `${p} ${v}`).join(', ')}`;
    }
    await run(ctx.transport, startUnitsScript(units), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 });
    return `versions unchanged (${Object.entries(prior.packages).map(([p, v]) => `${p} ${v}`).join(', ')}); runtime started`;
  },
};
