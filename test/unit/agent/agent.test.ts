import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentTick, type AgentHost } from '../../../src/agent/agent.js';
import { pruneRuns } from '../../../src/agent/host.js';
import { parsePolicy, type AgentPolicy } from '../../../src/agent/policy.js';
import type { MaintenanceRun } from '../../../src/agent/run-object.js';
import type { RunSpec } from '../../../src/agent/spec.js';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import type { Journal } from '../../../src/runbook/journal.js';

// The agent's look at its node's MaintenanceRun against a fake host (its systemd and files) and a fake API that keeps
// the object's resourceVersion as the apiserver does: what it refuses, claims, starts, publishes, passes on and
// removes, and when; decided from the host and the journal, never from the object alone.

const NODE = 'n1';
const POLICY = parsePolicy('packages: [containerd, runc]\nreboot: true\n');

function fakeApi(spec: RunSpec) {
  const store = { run: { metadata: { name: NODE, uid: '0d5e1c2a-77f0-4b8e-9a51-3c2b7e9d4f10', resourceVersion: '1' }, spec } as MaintenanceRun | undefined, tokens: 0, refuse: 0 };
  const bump = (run: MaintenanceRun) => ({ ...run, metadata: { ...run.metadata, resourceVersion: String(Number(run.metadata.resourceVersion) + 1) } });
  const cluster = {
    get: async () => {
      if (!store.run) throw new ApiError(404, 'NotFound', 'not found');
      return structuredClone(store.run);
    },
    requestToken: async (namespace: string, name: string, { node }: { node?: string }) => {
      expect([namespace, name, node]).toEqual(['node-maint', 'node-maint-run', NODE]);
      store.tokens++;
      return { token: `t${store.tokens}`, expiresAt: new Date(Date.now() + 3 * 3600_000) };
    },
    request: async (method: string, path: string, body: any) => {
      if (method !== 'PUT' || !path.endsWith('/status')) throw new Error(`unexpected ${method} ${path}`);
      if (store.refuse > 0 || body.metadata.resourceVersion !== store.run!.metadata.resourceVersion) {
        store.refuse = Math.max(0, store.refuse - 1);
        throw new ApiError(409, 'Conflict', 'the object has been modified');
      }
      store.run = bump({ ...store.run!, status: body.status });
      return structuredClone(store.run);
    },
    kubeconfigAs: () => '{"kubeconfig":true}',
  } as unknown as Cluster;
  /** The requester's write: a stop, as the API would bump the version. */
  const stop = (reason: string) => (store.run = bump({ ...store.run!, spec: { ...store.run!.spec, stop: { reason } } }));
  return { store, cluster, stop };
}

function fakeHost() {
  const calls: string[] = [];
  const state = { boot: 'b1', running: false, known: false, exit: undefined as number | undefined, log: '', out: '', stopping: false, refuseStart: false, left: 0, installed: { containerd: '1.6.20~ds1-1+deb12u2' } as Record<string, string>, request: undefined as unknown };
  const host: AgentHost = {
    bootId: async () => state.boot,
    stageRuntime: async () => '/var/lib/node-maint/agent/runtime-x',
    writeCredentials: async (id, token, kubeconfig) => void calls.push(`credentials ${id} ${token}${kubeconfig ? ' +kubeconfig' : ''}`),
    forgetCredentials: async (id) => void calls.push(`forget ${id}`),
    writeRequest: async (_id, run) => void (state.request = run),
    removeUnit: async (unit) => void calls.push(`remove ${unit}`),
    startUnit: async (unit, _runtime, id) => {
      if (state.refuseStart) throw new Error('Failed to start transient service unit: Access denied');
      calls.push(`start ${unit} ${id}`);
      Object.assign(state, { running: true, known: true });
    },
    unitState: async () => ({ known: state.known, running: state.running, exit: state.exit }),
    unitProcesses: async () => state.left,
    runUnits: async () => [],
    signalUnit: async (unit, signal) => void calls.push(`signal ${unit} ${signal}`),
    shuttingDown: async () => state.stopping,
    readOutput: async (_id, offset) => Buffer.from(state.log).subarray(offset),
    readReport: async () => state.out,
    installedVersion: async (pkg) => state.installed[pkg],
    olderThan: async (a, b) => a < b,
  };
  return { host, calls, state };
}

const upgrade = (extra: Partial<RunSpec['upgrade']> = {}): RunSpec => ({ nodeName: NODE, requestedBy: 'alice', command: 'upgrade', upgrade: { targets: [{ package: 'containerd', version: '1.6.20~ds1-1+deb12u3' }], ...extra } });

function agent(spec: RunSpec = upgrade(), { policy = POLICY as AgentPolicy | string, journal = undefined as Journal | undefined } = {}) {
  const api = fakeApi(spec);
  const h = fakeHost();
  const j = { journal };
  const tokens = new Map();
  const tick = () => agentTick({ cluster: api.cluster, host: h.host, node: NODE, policy: async () => policy, journal: async () => j.journal, log: () => undefined, tokens });
  const unitName = () => api.store.run!.status?.unit ?? `node-maint-run-${api.store.run!.status?.runId}`;
  return { ...h, api, tick, j, status: () => api.store.run!.status ?? {}, unitName, starts: () => h.calls.filter((c) => c.startsWith('start')) };
}

describe("a node's agent", () => {
  it('claims a run first, starts it at the next look as a unit of its boot whose command line carries only its id; a look with nothing new writes nothing', async () => {
    const a = agent();
    expect(await a.tick()).toBe('running');
    expect(a.status()).toMatchObject({ phase: 'Starting', boot: 'b1', starts: 0 });
    expect(a.starts()).toEqual([]);
    const id = a.status().runId!;
    expect(id).toBe('0d5e1c2a77f0');
    await a.tick();
    expect(a.status()).toMatchObject({ phase: 'Running', unit: `node-maint-run-${id}`, starts: 1 });
    expect(a.calls).toEqual([`credentials ${id} t1 +kubeconfig`, `remove node-maint-run-${id}`, `start node-maint-run-${id} ${id}`]);
    expect(a.state.request).toEqual({
      command: 'upgrade-node',
      args: [NODE, '--output', 'text', '--transport', 'local', '--kubeconfig', `/run/node-maint/agent/${id}.kubeconfig`, '--textfile-dir', '/var/lib/node-maint/agent/metrics', '--lease-namespace', 'kube-system', '--smoke-namespace', 'node-maint-smoke', '--to', 'containerd=1.6.20~ds1-1+deb12u3'],
    });
    const version = a.api.store.run!.metadata.resourceVersion;
    await a.tick();
    expect(a.starts()).toHaveLength(1);
    expect(a.api.store.run!.metadata.resourceVersion).toBe(version);
  });

  it('refuses what its owner does not allow, each thing by name, and starts nothing', async () => {
    const cases: Array<[RunSpec, string]> = [
      [upgrade({ targets: [{ package: 'openssh-server', version: '1:9.2p1-2+deb12u3' }] }), 'the package openssh-server (the agent\'s policy allows containerd, runc)'],
      [upgrade({ targets: [{ package: 'containerd', version: '1.6.20~ds1-1+deb12u1' }] }), 'a downgrade: containerd 1.6.20~ds1-1+deb12u2 -> 1.6.20~ds1-1+deb12u1 (the agent\'s policy: downgrades: false)'],
      [upgrade({ allowControlPlane: true, allowNoRollback: true, proof: 'network-only' }), "a control-plane node (the agent's policy: controlPlane: false); a run that could not roll back (the agent's policy: noRollback: false); the network-only proof"],
      [upgrade({ drain: { force: true, deleteEmptyDirData: true, gracePeriodSeconds: 0 } }), "deleting pods' emptyDir data (the agent's policy: deleteEmptyDirData: false); deleting pods no controller recreates (the agent's policy: force: false); a grace period of 0s instead of each pod's own"],
      [upgrade({ targets: undefined, pendingUpgrades: {} }), "apt's pending upgrades (the agent's policy: pendingUpgrades: false)"],
    ];
    for (const [spec, words] of cases) {
      const a = agent(spec);
      await a.tick();
      expect(a.status()).toMatchObject({ phase: 'Refused', exitCode: 2 });
      expect(a.status().message).toContain(words);
      expect(a.status().message).toMatch(/nothing was started$/);
      expect(await a.tick()).toBe('idle');
      expect(a.calls).toEqual([]);
    }
    const none = agent(upgrade(), { policy: 'this agent has no policy' });
    await none.tick();
    expect(none.status()).toMatchObject({ phase: 'Refused', message: 'refused the request: this agent has no policy; nothing was started' });
  });

  it("refuses a spec its own check finds wrong (an older CRD let it through): systemd's ${} and %, another node, fields it does not know", async () => {
    const bad: Array<[unknown, string]> = [
      [{ ...upgrade(), upgrade: { targets: [{ package: 'containerd', version: '${X}1.6' }] } }, 'malformed version'],
      [{ ...upgrade(), upgrade: { targets: [{ package: 'containerd%n', version: '1.6' }] } }, 'invalid package name'],
      [{ ...upgrade(), nodeName: 'n2' }, 'spec.nodeName is "n2", and this agent runs on n1'],
      [{ ...upgrade(), upgrade: { ...upgrade().upgrade, hookBeforeDrain: 'touch /x' } }, 'spec.upgrade.hookBeforeDrain is not a field this agent knows'],
      [{ ...upgrade(), command: 'audit', audit: { reclaim: true }, upgrade: undefined }, 'spec.audit.reclaim is not a field this agent knows'],
      [{ ...upgrade(), upgrade: { targets: [{ package: 'containerd', version: '1.6 --hook-before-drain=x' }] } }, 'malformed version'],
    ];
    for (const [spec, words] of bad) {
      const a = agent(spec as RunSpec);
      await a.tick();
      expect(a.status()).toMatchObject({ phase: 'Refused', exitCode: 2 });
      expect(a.status().message).toContain(words);
      expect(a.calls).toEqual([]);
    }
  });

  it('ends a run withdrawn before its claim, or stopped between the claim and the start, with nothing started (exit 18)', async () => {
    const early = agent();
    early.api.stop('withdrawn by its caller');
    await early.tick();
    expect(early.status()).toMatchObject({ phase: 'Stopped', exitCode: 18 });
    expect(early.status().message).toContain('withdrawn (withdrawn by its caller) before any agent started it: nothing was started');
    const between = agent();
    await between.tick();
    between.api.stop('SIGINT');
    await between.tick();
    expect(between.status()).toMatchObject({ phase: 'Stopped', exitCode: 18, message: 'a stop was asked (SIGINT) before the run started: nothing was started' });
    expect([...early.calls, ...between.calls]).toEqual([]);
  });

  it('a claim that a stop overtook is refused by the API: the next look sees the stop', async () => {
    const a = agent();
    a.api.store.refuse = 1;
    await a.tick();
    expect(a.status().phase).toBeUndefined();
    a.api.stop('withdrawn');
    await a.tick();
    expect(a.status().phase).toBe('Stopped');
    expect(a.calls).toEqual([]);
  });

  it('a stop that lands after the unit started (before its record) is passed to the run: systemd says it started', async () => {
    const a = agent();
    await a.tick();
    // The unit started, and the agent died before it wrote Running.
    Object.assign(a.state, { known: true, running: true });
    a.api.stop('SIGINT');
    await a.tick();
    expect(a.status()).toMatchObject({ phase: 'Running', starts: 1 });
    await a.tick();
    expect(a.calls.filter((c) => !c.startsWith('credentials'))).toEqual([`signal ${a.unitName()} SIGINT`]);
    Object.assign(a.state, { running: false, exit: 18 });
    await a.tick();
    expect(a.status()).toMatchObject({ phase: 'Stopped', exitCode: 18 });
  });

  it('publishes whole lines and the step while the run goes on; its report and exit when it ends; the unit removed only once nothing it started is left', async () => {
    const a = agent();
    await a.tick();
    await a.tick();
    a.state.log = '[ 1/12] Preflight checks ...\n[ 1/12] chec';
    await a.tick();
    expect(a.status()).toMatchObject({ output: '[ 1/12] Preflight checks ...\n', read: 29, step: '1/12 Preflight checks' });
    a.state.log += 'ked\n[ 4/12] Stop kubelet ...\n';
    await a.tick();
    expect(a.status().step).toBe('4/12 Stop kubelet');
    // A stop at the install's safe point: the run exits, apt goes on in its unit.
    Object.assign(a.state, { running: false, exit: 18, left: 2, out: '{"result":"stopped"}\n' });
    expect(await a.tick()).toBe('running');
    expect(a.status()).toMatchObject({ phase: 'Stopped', exitCode: 18, report: '{"result":"stopped"}\n' });
    expect(a.calls.filter((c) => c.startsWith('remove'))).toHaveLength(1);
    a.state.left = 0;
    expect(await a.tick()).toBe('ended');
    expect(a.calls.slice(-2)).toEqual([`remove ${a.unitName()}`, `forget ${a.status().runId}`]);
    expect(a.status().unitRemoved).toBe(true);
    expect(await a.tick()).toBe('idle');
  });

  it("passes the requester's stop to the run once", async () => {
    const a = agent();
    await a.tick();
    await a.tick();
    a.api.stop('SIGINT');
    await a.tick();
    await a.tick();
    expect(a.calls.filter((c) => c.startsWith('signal'))).toEqual([`signal ${a.unitName()} SIGINT`]);
    expect(a.status().stopSent).toBe(true);
  });

  it('after a boot, starts the run again only when its journal says it is unfinished: a run finished over SSH meanwhile is over', async () => {
    const a = agent(upgrade({ reboot: 'always' }));
    await a.tick();
    await a.tick();
    const claimedAt = a.status().claimedAt!;
    Object.assign(a.state, { running: false, exit: 143, stopping: true });
    await a.tick();
    expect(a.status().phase).toBe('Running');
    const journal = (status: Journal['status'], updatedAt: string) => ({ runId: 'r9', status, updatedAt, startedAt: claimedAt }) as Journal;
    a.j.journal = journal('running', new Date(Date.parse(claimedAt) + 1000).toISOString());
    Object.assign(a.state, { boot: 'b2', stopping: false, known: false });
    await a.tick();
    expect(a.status()).toMatchObject({ phase: 'Running', boot: 'b2', starts: 2 });
    expect(a.status().output).toContain(`node-maint agent: ${NODE} is up on a new boot, and its journal says run r9 is unfinished (running): continuing it`);
    // Down again; finished over SSH while the agent was away.
    a.j.journal = journal('completed', new Date(Date.parse(claimedAt) + 5000).toISOString());
    Object.assign(a.state, { boot: 'b3', known: false, running: false });
    await a.tick();
    expect(a.status()).toMatchObject({ phase: 'Succeeded', exitCode: 0 });
    expect(a.status().message).toContain('its journal says run r9 is completed');
    expect(a.starts()).toHaveLength(2);
  });

  it('after a boot, starts a run whose journal is older than its claim (it had not begun), and at most 4 times', async () => {
    const a = agent(upgrade({ reboot: 'always' }), { journal: { runId: 'old', status: 'completed', updatedAt: '2020-01-01T00:00:00Z' } as Journal });
    await a.tick();
    await a.tick();
    for (const boot of ['b2', 'b3', 'b4']) {
      Object.assign(a.state, { boot, running: false, known: false });
      await a.tick();
    }
    expect(a.status()).toMatchObject({ phase: 'Running', starts: 4 });
    expect(a.status().output).toContain('the run had not begun its work: starting it');
    a.state.boot = 'b5';
    a.state.known = false;
    await a.tick();
    expect(a.status()).toMatchObject({ phase: 'Failed', exitCode: 1 });
    expect(a.status().message).toContain('the run was started 4 times');
    expect(a.starts()).toHaveLength(4);
  });

  it('says why the host refused a run it may start: nothing started, exit 10, its credentials gone', async () => {
    const a = agent();
    a.state.refuseStart = true;
    await a.tick();
    await a.tick();
    expect(a.status()).toMatchObject({ phase: 'Failed', exitCode: 10 });
    expect(a.status().message).toBe(`could not start the run on ${NODE}: Failed to start transient service unit: Access denied; nothing was started`);
    expect(a.calls).toContain(`forget ${a.status().runId}`);
    expect(a.starts()).toEqual([]);
  });

  it('renews a run token only once half its life is gone', async () => {
    const a = agent();
    await a.tick();
    await a.tick();
    for (let i = 0; i < 5; i++) await a.tick();
    expect(a.api.store.tokens).toBe(1);
  });
});

describe("the runs' output the agent keeps on its node", () => {
  it('is the last 20 runs: older runs lose their files, newer ones keep them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-runs-'));
    try {
      for (let i = 0; i < 23; i++) {
        for (const ext of ['log', 'out', 'request.json']) {
          writeFileSync(join(dir, `run${i}.${ext}`), 'x');
          utimesSync(join(dir, `run${i}.${ext}`), 1_000 + i, 1_000 + i);
        }
      }
      await pruneRuns(dir, 20);
      const left = readdirSync(dir);
      expect(left).toHaveLength(60);
      expect(left).not.toContain('run0.log');
      expect(left).not.toContain('run2.request.json');
      expect(left).toContain('run3.out');
      expect(left).toContain('run22.log');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
