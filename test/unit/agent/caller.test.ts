import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runThroughAgent } from '../../../src/agent/caller.js';
import type { MaintenanceRun } from '../../../src/agent/run-object.js';
import type { RunSpec } from '../../../src/agent/spec.js';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { ExitCode } from '../../../src/errors.js';

// The caller's side of a run through the agent against a fake API (its MaintenanceRun, the agent's pod): what it
// asks, when it withdraws, what it says and which exit code it gives, on a clock the test moves.

const NODE = 'n1';
const ready = { metadata: { name: 'node-maint-agent-x' }, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } };

function fakeApi(existing?: MaintenanceRun) {
  const store = { run: existing, version: 1, patches: [] as unknown[], deletes: 0, onAgentLook: undefined as (() => void) | undefined };
  const bump = () => String(++store.version);
  const cluster = {
    user: 'alice',
    request: async (method: string, path: string, body: any) => {
      if (path.endsWith('selfsubjectaccessreviews')) return { status: { allowed: true } };
      if (path.endsWith('selfsubjectreviews')) return { status: { userInfo: { username: 'alice' } } };
      if (method === 'POST') {
        store.run = { ...body, metadata: { ...body.metadata, uid: `u${store.version}`, resourceVersion: bump(), creationTimestamp: 't' } };
        return store.run;
      }
      if (method === 'DELETE') {
        if (body.preconditions.resourceVersion !== store.run?.metadata.resourceVersion) throw new ApiError(409, 'Conflict', 'the object has been modified');
        store.deletes++;
        store.run = undefined;
        return {};
      }
      throw new Error(`unexpected ${method} ${path}`);
    },
    get: async (path: string) => {
      if (path.includes('/pods')) {
        store.onAgentLook?.();
        return { metadata: {}, items: [ready] };
      }
      if (path.startsWith('/api/v1/nodes/')) return { metadata: { name: NODE } };
      if (!store.run) throw new ApiError(404, 'NotFound', 'not found');
      return structuredClone(store.run);
    },
    mergePatch: async (_path: string, body: any) => {
      store.patches.push(body);
      if (body.spec) store.run = { ...store.run!, spec: { ...store.run!.spec, ...body.spec }, metadata: { ...store.run!.metadata, resourceVersion: bump() } };
      return {};
    },
  } as unknown as Cluster;
  /** The agent's write of the status. */
  const agentWrites = (status: MaintenanceRun['status']) => (store.run = { ...store.run!, status, metadata: { ...store.run!.metadata, resourceVersion: bump() } });
  return { store, cluster, agentWrites };
}

const spec: Omit<RunSpec, 'requestedBy'> = { nodeName: NODE, command: 'upgrade', upgrade: { targets: [{ package: 'containerd', version: '2' }] } };

function call(api: ReturnType<typeof fakeApi>, asked = spec) {
  const out = { stdout: '', stderr: '' };
  const stop = new AbortController();
  const done = runThroughAgent(api.cluster, { spec: asked, stop: stop.signal, io: { stdout: (t) => void (out.stdout += t), stderr: (t) => void (out.stderr += t) } }).then(
    (code) => ({ code }),
    (error: Error) => ({ code: -1, error }),
  );
  return { out, stop, done };
}

describe('a caller through the agent', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('asks, prints the run as published, and exits with its code; a stop is passed as spec.stop', async () => {
    const api = fakeApi();
    const c = call(api);
    await vi.advanceTimersByTimeAsync(10);
    expect(api.store.run?.spec).toEqual({ ...spec, requestedBy: 'alice' });
    api.agentWrites({ phase: 'Running', starts: 1, output: '[ 1/12] Preflight checks ...\n', outputFrom: 0 });
    await vi.advanceTimersByTimeAsync(1_500);
    c.stop.abort('SIGINT');
    await vi.advanceTimersByTimeAsync(1_500);
    expect(api.store.run?.spec.stop?.reason).toBe('SIGINT');
    api.agentWrites({ phase: 'Stopped', starts: 1, exitCode: 18, output: '[ 1/12] Preflight checks ...\nstopped\n', outputFrom: 0, report: '{"result":"stopped"}\n' });
    await vi.advanceTimersByTimeAsync(1_500);
    expect(await c.done).toEqual({ code: 18 });
    expect(c.out.stderr).toMatch(/^node-maint: asked the agent on n1 for: upgrade containerd=2 \(MaintenanceRun n1\); its output follows\n\[ 1\/12\] Preflight checks \.\.\.\nnode-maint: passed SIGINT to the run on n1 through its agent; waiting for it to stop at its next safe point\nstopped\n$/);
    expect(c.out.stdout).toBe('{"result":"stopped"}\n');
  });

  it('withdraws a run no agent claims in 60 s, and says nothing was changed; no agent starts it after', async () => {
    const api = fakeApi();
    const c = call(api);
    await vi.advanceTimersByTimeAsync(61_000);
    expect(api.store.run?.spec.stop?.reason).toBe('withdrawn by its caller: no agent claimed it');
    await vi.advanceTimersByTimeAsync(21_000);
    const r = await c.done;
    expect(r.code).toBe(-1);
    expect((r as { error: Error }).error.message).toBe(`the agent on ${NODE} did not start the run within 60s (its pod running? its log says why); the request was withdrawn, so no agent will start it, and nothing was changed`);
  });

  it('a claim that lands as it withdraws: follows the run, stopped by the withdrawal, to its real end', async () => {
    const api = fakeApi();
    const c = call(api);
    await vi.advanceTimersByTimeAsync(61_000);
    api.agentWrites({ phase: 'Running', starts: 1, output: '', outputFrom: 0 });
    await vi.advanceTimersByTimeAsync(30_000);
    api.agentWrites({ phase: 'Stopped', starts: 1, exitCode: 18, output: '', outputFrom: 0, report: 'stopped at preflight\n' });
    await vi.advanceTimersByTimeAsync(1_500);
    expect(await c.done).toEqual({ code: 18 });
    expect(c.out.stdout).toBe('stopped at preflight\n');
  });

  it('attached to a run another command asked, says so and exits 20 at its end, whatever that run\'s code', async () => {
    const other: MaintenanceRun = { metadata: { name: NODE, uid: 'u0', resourceVersion: '1', creationTimestamp: 'T0' }, spec: { nodeName: NODE, requestedBy: 'bob', command: 'upgrade', upgrade: { reboot: 'always' } }, status: { phase: 'Running', starts: 1 } };
    const api = fakeApi(other);
    const c = call(api);
    await vi.advanceTimersByTimeAsync(10);
    expect(c.out.stderr).toContain(`node-maint: attaching to the run already under way on ${NODE} through its agent (upgrade (no package), reboot always, asked by bob at T0): not what was asked now (upgrade containerd=2), which does not start`);
    api.agentWrites({ phase: 'Succeeded', starts: 1, exitCode: 0, output: '', outputFrom: 0 });
    await vi.advanceTimersByTimeAsync(1_500);
    expect(await c.done).toEqual({ code: ExitCode.otherRun });
    expect(c.out.stderr).toContain('the run asked now did not start: run the same command again');
    expect(api.store.deletes).toBe(0);
  });

  it('gives up, with words, on an agent that has written nothing for longer than the run may go without it', async () => {
    const api = fakeApi();
    const c = call(api);
    await vi.advanceTimersByTimeAsync(10);
    api.agentWrites({ phase: 'Running', starts: 1, step: '7/12 Upgrade the runtime', output: '', outputFrom: 0 });
    await vi.advanceTimersByTimeAsync(1_000_000);
    expect(await Promise.race([c.done, Promise.resolve('waiting')])).toBe('waiting');
    await vi.advanceTimersByTimeAsync(700_000);
    const r = await c.done;
    expect((r as { error: Error }).error.message).toMatch(new RegExp(`^the agent on ${NODE} has written nothing for \\d+s, longer than the run may go without it \\(1620s\\): its node down\\? The run may go on there \\(its last step: 7/12 Upgrade the runtime\\)`));
  });

  it('prints the report of the run it asked that ended while no caller followed it; the same ask after that starts anew', async () => {
    const ended: MaintenanceRun = { metadata: { name: NODE, uid: 'u0', resourceVersion: '1', creationTimestamp: 'T0' }, spec: { ...spec, requestedBy: 'alice' }, status: { phase: 'Succeeded', starts: 1, exitCode: 0, output: 'done\n', outputFrom: 0, report: 'upgraded\n' } };
    const api = fakeApi(ended);
    const c = call(api);
    await vi.advanceTimersByTimeAsync(10);
    expect(await c.done).toEqual({ code: 0 });
    expect(c.out.stdout).toBe('upgraded\n');
    expect(api.store.patches).toContainEqual({ metadata: { annotations: { 'node-maint.io/delivered': 'true' } } });
  });

  /** An ended run whose end a caller already printed: the next ask deletes it. */
  const deliveredEnd = (status: MaintenanceRun['status']): MaintenanceRun => ({
    metadata: { name: NODE, uid: 'u0', resourceVersion: '1', creationTimestamp: 'T0', annotations: { 'node-maint.io/delivered': 'true' } },
    spec: { ...spec, requestedBy: 'alice' },
    status,
  });

  it('an ended run the agent writes again (its unit removed) between the read and the delete: read again, then asked', async () => {
    const status = { phase: 'Succeeded' as const, starts: 1, exitCode: 0, unit: 'node-maint-run-1' };
    const api = fakeApi(deliveredEnd(status));
    api.store.onAgentLook = () => {
      api.store.onAgentLook = undefined;
      api.agentWrites({ ...status, unitRemoved: true });
    };
    const c = call(api);
    await vi.advanceTimersByTimeAsync(10);
    expect(api.store.deletes).toBe(1);
    expect(api.store.run).toMatchObject({ spec: { ...spec, requestedBy: 'alice' } });
    expect(api.store.run?.status).toBeUndefined();
    api.agentWrites({ phase: 'Succeeded', starts: 1, exitCode: 0, output: 'done\n', outputFrom: 0 });
    await vi.advanceTimersByTimeAsync(1_500);
    expect(await c.done).toEqual({ code: 0 });
  });

  it('an ended run written again at every look: after 5 reads the conflict is the error, nothing deleted', async () => {
    const status = { phase: 'Succeeded' as const, starts: 1, exitCode: 0 };
    const api = fakeApi(deliveredEnd(status));
    api.store.onAgentLook = () => void api.agentWrites(status);
    const c = call(api);
    await vi.advanceTimersByTimeAsync(10);
    const r = await c.done;
    expect((r as { error: Error }).error.message).toMatch(/modified/);
    expect(api.store.deletes).toBe(0);
    expect(api.store.run?.metadata.uid).toBe('u0');
  });
});
