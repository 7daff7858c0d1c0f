import { availableVersionsScript, installScript, parseAvailableVersions, refreshScript } from '../node/packages/index.js';
import { notAtTarget, runningBinaries } from '../node/runtime/binaries.js';
import { runtimeUnits } from '../node/runtime/flavor.js';
import { parseUnitStates, startUnitsScript, stopUnitsScript, unitStatesScript } from '../node/units.js';
import { run } from '../node/transport/index.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';

export interface UpgradePlan extends StepPlan {
  install: Record<string, string>;
  units: string[];
}

const unitsOf = (ctx: RunContext) => {
  const prior = ctx.journal.prior!;
  return prior.runtimeServices.length > 0 ? prior.runtimeServices : runtimeUnits(prior.flavor);
};

async function downUnits(ctx: RunContext, units: string[]): Promise<string[]> {
  return [...parseUnitStates(await run(ctx.transport, unitStatesScript(units)))].filter(([, active]) => !active).map(([u]) => u);
}

/** "containerd 1.6.20~ds1-1+deb12u2 (want 1.6.20~ds1-1+deb12u3)" for each package not cleanly at its version. */
async function notInstalled(ctx: RunContext, versions: Record<string, string>): Promise<string[]> {
  const installed = await ctx.installedVersions(Object.keys(versions));
  return Object.entries(versions).filter(([p, v]) => installed[p] !== v).map(([p, v]) => `${p} ${installed[p] || 'not cleanly installed'} (want ${v})`);
}

/** The targets installed, and (what dpkg cannot tell) each target's daemon running the new file at its version. */
export async function expectAtTargets(ctx: RunContext): Promise<void> {
  const wrong = await notInstalled(ctx, ctx.options.targets);
  if (wrong.length > 0) throw new Error(`installed versions differ from the targets: ${wrong.join(', ')}`);
  await runtimeAtTargets(ctx, ctx.options.targets);
}

async function runtimeAtTargets(ctx: RunContext, targets: Record<string, string>): Promise<void> {
  const problems = notAtTarget(targets, await runningBinaries(ctx.transport, Object.keys(targets)));
  if (problems.length > 0) throw new Error(`the runtime does not run the installed version: ${problems.join('; ')}`);
}

/**
 * Stops the runtime, installs exact versions through apt (the operator's holds kept, the dpkg
 * lock waited for up to --lock-timeout), starts it again.
 */
async function install(ctx: RunContext, versions: Record<string, string>, units: string[]): Promise<void> {
  const timeoutMs = ctx.options.commandTimeoutSeconds * 1000;
  const { lockTimeoutSeconds } = ctx.options;
  await run(ctx.transport, stopUnitsScript([...units].reverse()), { timeoutMs });
  const available = parseAvailableVersions(await run(ctx.transport, availableVersionsScript(Object.keys(versions))));
  if (Object.entries(versions).some(([p, v]) => !available.get(p)?.has(v))) await run(ctx.transport, refreshScript(lockTimeoutSeconds), { timeoutMs });
  await run(ctx.transport, installScript(versions, { hold: ctx.journal.prior?.held ?? [], lockTimeoutSeconds }), { timeoutMs });
  await run(ctx.transport, startUnitsScript(units), { timeoutMs });
}

export const upgradeRuntime: Step<UpgradePlan> = {
  name: 'upgrade-runtime',
  title: 'Upgrade the runtime',
  undo: 'reinstall the prior versions (held again if they were held) and start the runtime',
  async plan(ctx) {
    const units = unitsOf(ctx);
    // A package a killed dpkg left half-installed is at no version: it is installed again.
    const installed = await ctx.installedVersions(Object.keys(ctx.options.targets));
    const install = Object.fromEntries(Object.entries(ctx.options.targets).filter(([p, v]) => installed[p] !== v));
    const down = await downUnits(ctx, units);
    const changing = Object.keys(install).length > 0;
    const actions = [
      ...(changing ? [`stop ${[...units].reverse().join(', ')}`] : []),
      ...Object.entries(install).map(([p, v]) => `install ${p} ${installed[p] || '(not cleanly installed)'} -> ${v}`),
      ...(changing || down.length > 0 ? [`start ${units.join(', ')}`] : []),
    ];
    return {
      install,
      units,
      actions,
      summary: actions.length === 0 ? 'runtime at target versions and running' : Object.entries(install).map(([p, v]) => `${p} -> ${v}`).join(', ') || `start ${down.join(', ')}`,
      detail: { from: installed, to: ctx.options.targets, units, held: ctx.journal.prior?.held ?? [] },
    };
  },
  async apply(ctx, plan) {
    if (Object.keys(plan.install).length > 0) await install(ctx, plan.install, plan.units);
    else await run(ctx.transport, startUnitsScript(plan.units), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 });
    return Object.entries(plan.install).map(([p, v]) => `${p} ${v}`).join(', ') || 'runtime started';
  },
  async verify(ctx, plan) {
    const down = await downUnits(ctx, plan.units);
    if (down.length > 0) throw new Error(`runtime units not running after the upgrade: ${down.join(', ')}`);
    await expectAtTargets(ctx);
  },
  async rollback(ctx) {
    const prior = ctx.journal.prior!;
    const units = unitsOf(ctx);
    const installed = await ctx.installedVersions(Object.keys(prior.packages));
    const back = Object.fromEntries(Object.entries(prior.packages).filter(([p, v]) => installed[p] !== v));
    if (Object.keys(back).length > 0) {
      await install(ctx, back, units);
      const wrong = await notInstalled(ctx, back);
      if (wrong.length > 0) throw new Error(`could not reinstall ${wrong.join(', ')}`);
      await runtimeAtTargets(ctx, back);
      return `reinstalled ${Object.entries(back).map(([p, v]) => `${p} ${v}`).join(', ')}`;
    }
    await run(ctx.transport, startUnitsScript(units), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 });
    return `versions unchanged (${Object.entries(prior.packages).map(([p, v]) => `${p} ${v}`).join(', ')}); runtime started`;
  },
};
