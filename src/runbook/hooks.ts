import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { RunbookError } from '../errors.js';
import { quote } from '../node/transport/quote.js';
import type { RunContext } from './step.js';

// The operator's commands at three points of a run: before the drain, after the runtime upgrade, after the uncordon.
// A hook runs on the node over the run's transport (behind the Lease's fence), or on this machine when it starts with
// "local:"; either way with the node's name, the run id and the versions in its environment. A hook that fails fails
// its step: before uncordon the run rolls back; after it, the failure is reported (exit 14) and nothing is downgraded.
export type HookPoint = 'beforeDrain' | 'afterUpgrade' | 'afterUncordon';
export type Hooks = Partial<Record<HookPoint, string>>;

export const HOOK_FLAGS: Record<HookPoint, string> = { beforeDrain: 'hook-before-drain', afterUpgrade: 'hook-after-upgrade', afterUncordon: 'hook-after-uncordon' };
/** Where the runner calls each hook: before the named step acts, or after it is done. */
export const HOOK_STEPS: Record<HookPoint, { step: string; when: 'before' | 'after' }> = {
  beforeDrain: { step: 'drain', when: 'before' },
  afterUpgrade: { step: 'upgrade-runtime', when: 'after' },
  afterUncordon: { step: 'uncordon', when: 'after' },
};

/** The hooks the operator gave that belong to this step. */
export function hooksOfStep(hooks: Hooks, step: string): Array<{ point: HookPoint; when: 'before' | 'after' }> {
  return (Object.keys(HOOK_STEPS) as HookPoint[]).filter((p) => hooks[p] && HOOK_STEPS[p].step === step).map((p) => ({ point: p, when: HOOK_STEPS[p].when }));
}

const LOCAL = 'local:';
const HOOK_TIMEOUT_MS = 300_000;
const exec = promisify(execFile);
const pairs = (versions: Record<string, string>) => Object.entries(versions).map(([p, v]) => `${p}=${v}`).join(',');

/** A command to run: on the node, or on this machine after "local:"; never empty, never with a NUL. */
export const isHookCommand = (command: unknown): command is string => typeof command === 'string' && command.replace(LOCAL, '').trim() !== '' && !command.includes('\0');

export function validateHooks(hooks: Hooks): void {
  for (const [point, command] of Object.entries(hooks)) {
    const flag = HOOK_FLAGS[point as HookPoint];
    if (!flag) throw new RunbookError('usage', `unknown hook ${point} (known: ${Object.keys(HOOK_FLAGS).join(', ')})`);
    if (!isHookCommand(command)) throw new RunbookError('usage', `--${flag} needs a command`);
  }
}

export function hookEnvironment(ctx: RunContext, point: HookPoint): Record<string, string> {
  return {
    NODE_MAINT_HOOK: HOOK_FLAGS[point].replace('hook-', ''),
    NODE_MAINT_NODE: ctx.options.node,
    NODE_MAINT_RUN_ID: ctx.runId,
    NODE_MAINT_FROM: pairs(ctx.journal.prior?.packages ?? {}),
    NODE_MAINT_TO: pairs(ctx.options.targets),
  };
}

/** Runs the hook for this point, if the operator gave one; throws when it fails, naming it and its output. */
export async function runHook(ctx: RunContext, point: HookPoint): Promise<void> {
  const command = ctx.options.hooks[point];
  if (!command) return;
  const env = hookEnvironment(ctx, point);
  const name = `--${HOOK_FLAGS[point]}`;
  ctx.progress(`hook ${name}: ${ctx.options.hooksSecret ? '(a secret: not shown)' : command}`);
  if (command.startsWith(LOCAL)) {
    try {
      await exec('bash', ['-c', command.slice(LOCAL.length)], { env: { ...process.env, ...env }, timeout: HOOK_TIMEOUT_MS, maxBuffer: 16 * 2 ** 20 });
    } catch (e) {
      const err = e as { code?: number; stderr?: string; message: string };
      throw new Error(`hook ${name} failed (exit ${err.code ?? '?'}): ${(err.stderr ?? err.message).trim().slice(-500)}`);
    }
    return;
  }
  const exports = Object.entries(env).map(([k, v]) => `export ${k}=${quote(v)}`).join('; ');
  const result = await ctx.transport.exec(`${exports}; ${command}`, { timeoutMs: HOOK_TIMEOUT_MS });
  if (result.code !== 0) throw new Error(`hook ${name} failed on ${ctx.options.node} (exit ${result.code}): ${(result.stderr || result.stdout).trim().slice(-500)}`);
}
