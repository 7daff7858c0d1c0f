import { availableVersionsScript, installScript, keepDebsScript, parseAvailableVersions, parseKeptDebs, refreshScript } from '../node/packages/index.js';
import { STATE_DIRS } from '../node/state/gather.js';
import { quote } from '../node/transport/quote.js';
import { notAtTarget, runningBinaries } from '../node/runtime/binaries.js';
import { parseUnitStates, startUnitsScript, stopUnitsScript, unitStatesScript } from '../node/units.js';
import { run } from '../node/transport/index.js';
import { priorVersions, runtimeUnitsOf } from '../runbook/journal.js';
import { PACKAGES } from '../node/state/gather.js';
import type { RunContext, Step, StepPlan } from '../runbook/step.js';
import { expectKubeletStopped } from './kubelet.js';

export interface UpgradePlan extends StepPlan {
  install: Record<string, string>;
  units: string[];
}

/**
 * The runtime's units, stopped and started around the install only when it changes one of the runtime's packages (what
 * apt changes alongside included): a kernel or a libc alone needs no daemon restart (the node's reboot starts them anew).
 */
function unitsOf(ctx: RunContext): string[] {
  const changing = [...Object.keys(ctx.options.targets), ...Object.keys(ctx.journal.prior?.alongside ?? {})];
  return changing.some((p) => PACKAGES.includes(p)) ? runtimeUnitsOf(ctx.journal.prior!) : [];
}

async function downUnits(ctx: RunContext, units: string[]): Promise<string[]> {
  return [...parseUnitStates(await run(ctx.reader, unitStatesScript(units)))].filter(([, active]) => !active).map(([u]) => u);
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
  const problems = notAtTarget(targets, await runningBinaries(ctx.reader, Object.keys(targets)));
  if (problems.length > 0) throw new Error(`the runtime does not run the installed version: ${problems.join('; ')}`);
}

/**
 * Stops the runtime, installs exact versions through apt (the operator's holds kept, the dpkg lock waited for up to
 * --lock-timeout), starts it again: one script, which finishes on the node whatever happens to this process (a stop,
 * a kill, a lost session), so the runtime is never left stopped between them. It is started again even when the
 * install failed: the rollback reinstalls what was there.
 */
async function install(ctx: RunContext, versions: Record<string, string>, units: string[], files: Record<string, string> = {}): Promise<void> {
  const { lockTimeoutSeconds } = ctx.options;
  const fromSources = Object.keys(versions).filter((p) => !files[p]);
  const available = parseAvailableVersions(fromSources.length > 0 ? await run(ctx.reader, availableVersionsScript(fromSources)) : '');
  const refresh = fromSources.some((p) => !available.get(p)?.has(versions[p]!)) ? refreshScript(lockTimeoutSeconds) : undefined;
  const specs = Object.entries(versions).map(([p, v]) => `${p}=${v}`).join(' ');
  // No unit to stop or start: the install alone (a package that is not the runtime's).
  const around = (script: string) => (units.length > 0 ? script : 'true');
  const script = [
    units.length > 0 ? `# stop ${[...units].reverse().join(' ')}; install ${specs}; start ${units.join(' ')}` : `# install ${specs}`,
    'rc=0',
    `( ${around(stopUnitsScript([...units].reverse()))} ) || rc=$?`,
    ...(refresh ? [`[ $rc != 0 ] || ( ${refresh} ) || rc=$?`] : []),
    `[ $rc != 0 ] || (
${installScript(versions, { hold: ctx.journal.prior?.held ?? [], lockTimeoutSeconds, files })}
) || rc=$?`,
    `( ${around(startUnitsScript(units))} ) || [ $rc != 0 ] || rc=$?`,
    'exit $rc',
  ].join('\n');
  await run(ctx.transport, script, { timeoutMs: ctx.options.commandTimeoutSeconds * 1000, what: `install ${specs}` });
}

/** Where a run keeps the .debs of the versions it replaces: the archives keep only the newest point release. */
const debsDir = (ctx: RunContext) => `${STATE_DIRS.backups}/${ctx.runId}/debs`;

/** The prior versions of these packages, kept as .deb files on the node before the install replaces them. */
async function keepPriorDebs(ctx: RunContext, packages: string[]): Promise<void> {
  const before = ctx.journal.prior ? priorVersions(ctx.journal.prior) : {};
  const priors = Object.fromEntries(packages.map((p) => [p, before[p] ?? '']).filter(([, v]) => v !== ''));
  if (Object.keys(priors).length === 0) return;
  const { kept, missing } = parseKeptDebs(await run(ctx.transport, keepDebsScript(priors, debsDir(ctx)), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 }));
  ctx.journal.keptDebs = { ...ctx.journal.keptDebs, ...kept };
  await ctx.saveJournal();
  for (const [p, path] of Object.entries(kept)) ctx.progress(`kept ${p} ${priors[p]} for a rollback: ${path}`);
  if (missing.length === 0) return;
  const what = missing.map((p) => `${p} ${priors[p]}`).join(', ');
  if (!ctx.options.allowNoRollback) throw new Error(`could not keep the .deb of ${what} (neither apt's cache nor the sources have it now): nothing installed, so that a rollback is never without it`);
  ctx.progress(`no .deb of ${what} could be kept: a rollback cannot reinstall it (--allow-no-rollback)`);
}

/** The kept .debs for these packages that are still on the node. */
async function keptDebsOnNode(ctx: RunContext, packages: string[]): Promise<Record<string, string>> {
  const kept = Object.entries(ctx.journal.keptDebs ?? {}).filter(([p]) => packages.includes(p));
  if (kept.length === 0) return {};
  const present = new Set((await run(ctx.reader, kept.map(([, f]) => `[ -f ${quote(f)} ] && echo ${quote(f)}`).join('; ') + '; true')).split('\n'));
  return Object.fromEntries(kept.filter(([, f]) => present.has(f)));
}

/**
 * Deletes the kept .debs of a run that completed or finished rolling back: neither can be rolled back any more, and
 * at about 100 MB a run they would fill the node. Best effort: what could not be deleted is said, nothing fails.
 */
export async function releaseKeptDebs(ctx: RunContext): Promise<void> {
  const finished = ctx.journal.status === 'completed' || ctx.journal.status === 'rolled-back';
  if (!finished || !ctx.journal.keptDebs) return;
  try {
    await run(ctx.transport, `rm -rf ${quote(debsDir(ctx))}`, { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 });
    ctx.progress(`deleted the .debs kept for a rollback (${debsDir(ctx)}): the run is ${ctx.journal.status}`);
    delete ctx.journal.keptDebs;
  } catch (error) {
    ctx.progress(`could not delete the .debs kept for a rollback in ${debsDir(ctx)}: ${(error as Error).message}`);
  }
}

export const upgradeRuntime: Step<UpgradePlan> = {
  name: 'upgrade-runtime',
  title: 'Upgrade the runtime',
  undo: 'reinstall the prior versions, from the .debs kept before the install (held again if they were held), and start the runtime',
  async plan(ctx) {
    const units = unitsOf(ctx);
    // A package a killed dpkg left half-installed is at no version: it is installed again.
    const installed = await ctx.installedVersions(Object.keys(ctx.options.targets));
    const install = Object.fromEntries(Object.entries(ctx.options.targets).filter(([p, v]) => installed[p] !== v));
    const down = await downUnits(ctx, units);
    const changing = Object.keys(install).length > 0;
    const actions = [
      ...(changing && units.length > 0 ? [`stop ${[...units].reverse().join(', ')}`] : []),
      ...Object.entries(install).map(([p, v]) => `install ${p} ${installed[p] || '(not cleanly installed)'} -> ${v}`),
      ...((changing || down.length > 0) && units.length > 0 ? [`start ${units.join(', ')}`] : []),
    ];
    const before = ctx.journal.prior ? priorVersions(ctx.journal.prior) : {};
    const keep = [...Object.keys(install), ...Object.keys(ctx.journal.prior?.alongside ?? {})].filter((p) => before[p]).map((p) => `keep the .deb of ${p} ${before[p]} for a rollback`);
    return {
      install,
      units,
      actions: changing ? [...keep, ...actions] : actions,
      summary: actions.length === 0 ? 'runtime at target versions and running' : Object.entries(install).map(([p, v]) => `${p} -> ${v}`).join(', ') || `start ${down.join(', ')}`,
      detail: { from: installed, to: ctx.options.targets, units, held: ctx.journal.prior?.held ?? [] },
    };
  },
  async apply(ctx, plan) {
    if (Object.keys(plan.install).length > 0) {
      // What apt changes alongside (shown in preflight's plan) is kept too: a rollback puts each one back.
      // A kubelet started since stop-kubelet (the boot's, late behind the runtime) would lose its sandboxes' network.
      await expectKubeletStopped(ctx, 'installed');
      await keepPriorDebs(ctx, [...Object.keys(plan.install), ...Object.keys(ctx.journal.prior?.alongside ?? {})]);
      await install(ctx, plan.install, plan.units);
    }
    else await run(ctx.transport, startUnitsScript(plan.units), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 });
    return Object.entries(plan.install).map(([p, v]) => `${p} ${v}`).join(', ') || 'runtime started';
  },
  async verify(ctx, plan) {
    const down = await downUnits(ctx, plan.units);
    if (down.length > 0) throw new Error(`runtime units not running after the upgrade: ${down.join(', ')}`);
    await expectAtTargets(ctx);
  },
  async rollback(ctx) {
    const prior = priorVersions(ctx.journal.prior!);
    const units = unitsOf(ctx);
    const installed = await ctx.installedVersions(Object.keys(prior));
    const back = Object.fromEntries(Object.entries(prior).filter(([p, v]) => installed[p] !== v));
    if (Object.keys(back).length > 0) {
      // The runtime under a running kubelet loses its sandboxes without a CNI DEL: the leak this tool exists to prevent.
      await expectKubeletStopped(ctx, 'reinstalled');
      const files = await keptDebsOnNode(ctx, Object.keys(back));
      await install(ctx, back, units, files);
      const wrong = await notInstalled(ctx, back);
      if (wrong.length > 0) throw new Error(`could not reinstall ${wrong.join(', ')}`);
      await runtimeAtTargets(ctx, back);
      const from = Object.keys(files).length > 0 ? ` (from the kept ${Object.values(files).join(', ')})` : '';
      return `reinstalled ${Object.entries(back).map(([p, v]) => `${p} ${v}`).join(', ')}${from}`;
    }
    if (units.length > 0) await run(ctx.transport, startUnitsScript(units), { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 });
    return `versions unchanged (${Object.entries(prior).map(([p, v]) => `${p} ${v}`).join(', ')})${units.length > 0 ? '; runtime started' : ''}`;
  },
};
