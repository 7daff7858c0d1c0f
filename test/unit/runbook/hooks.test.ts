import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hooksOfStep, runHook, validateHooks } from '../../../src/runbook/hooks.js';
import type { RunContext } from '../../../src/runbook/step.js';

function context(hooks: Record<string, string>, exec = async (_script: string) => ({ code: 0, stdout: '', stderr: '' })) {
  const scripts: string[] = [];
  const ctx = {
    options: { node: 'node-1', targets: { containerd: '1.6.20~ds1-1+deb12u3' }, hooks },
    runId: 'run-1',
    journal: { prior: { packages: { containerd: '1.6.20~ds1-1+deb12u2' } } },
    transport: { target: 'ssh root@node-1', exec: async (s: string) => (scripts.push(s), exec(s)), close: async () => undefined },
    progress: () => undefined,
  } as unknown as RunContext;
  return { ctx, scripts };
}

describe('hooks', () => {
  it('belong to their steps: before the drain, after the upgrade and after the uncordon', () => {
    const hooks = { beforeDrain: 'a', afterUpgrade: 'b', afterUncordon: 'c' };
    expect(hooksOfStep(hooks, 'drain')).toEqual([{ point: 'beforeDrain', when: 'before' }]);
    expect(hooksOfStep(hooks, 'upgrade-runtime')).toEqual([{ point: 'afterUpgrade', when: 'after' }]);
    expect(hooksOfStep(hooks, 'uncordon')).toEqual([{ point: 'afterUncordon', when: 'after' }]);
    expect(hooksOfStep({}, 'drain')).toEqual([]);
  });

  it('an empty command is a usage error naming its flag', () => {
    expect(() => validateHooks({ afterUpgrade: 'local:  ' })).toThrow('--hook-after-upgrade needs a command');
  });

  it('a local hook gets the node, the run and the versions in its environment', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'hooks-')), 'env');
    const { ctx } = context({ afterUpgrade: `local:echo "$NODE_MAINT_HOOK $NODE_MAINT_NODE $NODE_MAINT_FROM $NODE_MAINT_TO $NODE_MAINT_RUN_ID" > ${out}` });
    await runHook(ctx, 'afterUpgrade');
    expect(readFileSync(out, 'utf8').trim()).toBe('after-upgrade node-1 containerd=1.6.20~ds1-1+deb12u2 containerd=1.6.20~ds1-1+deb12u3 run-1');
  });

  it('a node hook runs over the transport with the environment quoted; its failure names it and its output', async () => {
    const { ctx, scripts } = context({ beforeDrain: 'check-canary' }, async () => ({ code: 2, stdout: '', stderr: 'canary down\n' }));
    await expect(runHook(ctx, 'beforeDrain')).rejects.toThrow('hook --hook-before-drain failed on node-1 (exit 2): canary down');
    expect(scripts[0]).toContain("export NODE_MAINT_TO='containerd=1.6.20~ds1-1+deb12u3'");
    expect(scripts[0]).toMatch(/; check-canary$/);
  });

  it('a hook the operator did not give does nothing', async () => {
    const { ctx, scripts } = context({});
    await runHook(ctx, 'afterUncordon');
    expect(scripts).toEqual([]);
  });
});
