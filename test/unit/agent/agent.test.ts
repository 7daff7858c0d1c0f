import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentTick, type AgentHost } from '../../../src/agent/agent.js';
import { pruneRuns } from '../../../src/agent/host.js';
import { readExchange, writeExchange } from '../../../src/agent/protocol.js';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';

// The agent's look at its ConfigMap against a fake host (its systemd and files) and a fake API that enforces the
// ConfigMap's resourceVersion, as the apiserver does: what it starts, publishes, passes on and removes, and when.

const NODE = 'n1';

function fakeApi(data: Record<string, string>) {
  const cm = { version: 1, data };
  let putsRefused = 0;
  const api = {
    cm,
    /** The caller writes between the agent's read and its write. */
    refuseNextPut: () => (putsRefused = 1),
    cluster: {
      get: async () => ({ metadata: { resourceVersion: String(cm.version) }, data: { ...cm.data } }),
      request: async (_method: string, _path: string, body: { metadata: { resourceVersion: string }; data: Record<string, string> }) => {
        if (putsRefused > 0 || body.metadata.resourceVersion !== String(cm.version)) {
          putsRefused = 0;
          throw new ApiError(409, 'Conflict', 'the object has been modified');
        }
        cm.version++;
        cm.data = body.data;
        return body;
      },
    } as unknown as Cluster,
  };
  return api;
}

function fakeHost() {
  const calls: string[] = [];
  const state = { boot: 'b1', running: false, known: false, exit: undefined as number | undefined, log: '', out: '', stopping: false, refuseStart: false };
  const host: AgentHost = {
    bootId: async () => state.boot,
    stageRuntime: async () => '/var/lib/node-maint/agent/runtime-x',
    writeKubeconfig: async (id) => {
      calls.push(`kubeconfig ${id}`);
      return '/run/node-maint/agent/r1.kubeconfig';
    },
    forgetKubeconfig: async (id) => void calls.push(`forget ${id}`),
    removeUnit: async (unit) => void calls.push(`remove ${unit}`),
    startUnit: async (unit, _runtime, command, args) => {
      if (state.refuseStart) throw new Error('Failed to start transient service unit: Access denied');
      calls.push(`start ${unit} ${command} ${args.join(' ')}`);
      Object.assign(state, { running: true, known: true });
    },
    unitState: async () => ({ known: state.known, running: state.running, exit: state.exit }),
    signalUnit: async (unit, signal) => void calls.push(`signal ${unit} ${signal}`),
    shuttingDown: async () => state.stopping,
    readOutput: async (_id, offset) => Buffer.from(state.log).subarray(offset),
    readReport: async () => state.out,
  };
  return { host, calls, state };
}

const request = (extra: Record<string, unknown> = {}) => writeExchange({ request: { id: 'r1', command: 'upgrade-node', args: [NODE, '--to', 'containerd=2'], by: 'op', at: 't', ...extra }, output: '', outputFrom: 0 });

function agent(data: Record<string, string> = request()) {
  const api = fakeApi(data);
  const h = fakeHost();
  const tick = () => agentTick({ cluster: api.cluster, host: h.host, node: NODE, namespace: 'node-maint', credentials: async () => 'kubeconfig', log: () => undefined });
  return { ...h, api, tick, seen: () => readExchange(api.cm.data) };
}

describe("a node's agent", () => {
  it('starts a request once, as a unit of its boot; a look with nothing new writes nothing', async () => {
    const a = agent();
    await a.tick();
    expect(a.calls).toEqual(['kubeconfig r1', 'remove node-maint-run-r1', `start node-maint-run-r1 upgrade-node ${NODE} --to containerd=2`]);
    expect(a.seen().unit).toEqual({ name: 'node-maint-run-r1', boot: 'b1', starts: 1 });
    const version = a.api.cm.version;
    await a.tick();
    expect(a.calls.filter((c) => c.startsWith('start'))).toHaveLength(1);
    expect(a.api.cm.version).toBe(version);
  });

  it('publishes whole lines while the run goes on, the rest and its report and exit code when it ends, and only then removes it', async () => {
    const a = agent();
    expect(await a.tick()).toBe('running');
    a.state.log = '[ 1/12] Preflight checks ...\n[ 1/12] chec';
    expect(await a.tick()).toBe('running');
    expect(a.seen()).toMatchObject({ output: '[ 1/12] Preflight checks ...\n', read: 29 });
    Object.assign(a.state, { running: false, exit: 0, log: `${a.state.log}ked`, out: '{"result":"upgraded"}\n' });
    expect(await a.tick()).toBe('ended');
    expect(a.seen()).toMatchObject({ output: '[ 1/12] Preflight checks ...\n[ 1/12] checked', exit: 0, report: '{"result":"upgraded"}\n' });
    expect(a.calls.slice(-2)).toEqual(['remove node-maint-run-r1', 'forget r1']);
    // Nothing more to do: the agent goes back to watching its ConfigMap instead of looking every 2 s.
    expect(await a.tick()).toBe('idle');
  });

  it('keeps the exit status on the node while its write is refused (the caller wrote meanwhile), and publishes it at the next look', async () => {
    const a = agent();
    await a.tick();
    Object.assign(a.state, { running: false, exit: 18, log: 'stopped\n' });
    a.api.refuseNextPut();
    await a.tick();
    expect(a.seen().exit).toBeUndefined();
    expect(a.calls).not.toContain('forget r1');
    expect(a.calls.filter((c) => c.startsWith('remove'))).toEqual(['remove node-maint-run-r1']);
    await a.tick();
    expect(a.seen()).toMatchObject({ exit: 18, output: 'stopped\n' });
    expect(a.calls).toContain('forget r1');
  });

  it("passes the caller's stop to the run once", async () => {
    const a = agent();
    await a.tick();
    a.api.cm.data = { ...a.api.cm.data, stop: 'SIGINT' };
    await a.tick();
    await a.tick();
    expect(a.calls.filter((c) => c.startsWith('signal'))).toEqual(['signal node-maint-run-r1 SIGINT']);
    expect(a.seen().stopSent).toBe(true);
  });

  it('takes a run ended by its own reboot for a run that goes on: started again on the new boot, at most 4 times', async () => {
    const a = agent();
    await a.tick();
    Object.assign(a.state, { running: false, exit: 143, stopping: true });
    await a.tick();
    expect(a.seen().exit).toBeUndefined();
    for (const boot of ['b2', 'b3', 'b4']) {
      Object.assign(a.state, { boot, stopping: false, running: false, known: false });
      await a.tick();
    }
    expect(a.seen().unit).toEqual({ name: 'node-maint-run-r1', boot: 'b4', starts: 4 });
    expect(a.seen().output).toContain(`node-maint agent: ${NODE} is up on a new boot: continuing the run (the same command, from its journal)`);
    a.state.boot = 'b5';
    await a.tick();
    expect(a.seen()).toMatchObject({ exit: 1 });
    expect(a.seen().output).toContain('the run was started 4 times');
    expect(a.calls.filter((c) => c.startsWith('start'))).toHaveLength(4);
  });

  it('refuses a request it may not run, and says why the host refused one it may: nothing started, exit 2 and 10', async () => {
    const bad = agent(request({ args: [NODE, '--kubeconfig', '/etc/kubernetes/admin.conf'] }));
    await bad.tick();
    expect(bad.seen()).toMatchObject({ exit: 2 });
    expect(bad.seen().output).toMatch(/^node-maint agent: refused the request: the request carries flags that only a caller may give/);
    const refused = agent();
    refused.state.refuseStart = true;
    await refused.tick();
    expect(refused.seen()).toMatchObject({ exit: 10 });
    expect(refused.seen().output).toBe(`node-maint agent: could not start the run on ${NODE}: Failed to start transient service unit: Access denied; nothing was started\n`);
    expect(refused.calls).toContain('forget r1');
    expect([...bad.calls, ...refused.calls].filter((c) => c.startsWith('start'))).toEqual([]);
  });
});

describe("the runs' output the agent keeps on its node", () => {
  it('is the last 20 runs: older runs lose both their files, newer ones keep them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-runs-'));
    try {
      for (let i = 0; i < 23; i++) {
        for (const ext of ['log', 'out']) {
          writeFileSync(join(dir, `run${i}.${ext}`), 'x');
          utimesSync(join(dir, `run${i}.${ext}`), 1_000 + i, 1_000 + i);
        }
      }
      await pruneRuns(dir, 20);
      const left = readdirSync(dir);
      expect(left).toHaveLength(40);
      expect(left).not.toContain('run0.log');
      expect(left).not.toContain('run2.out');
      expect(left).toContain('run3.out');
      expect(left).toContain('run22.log');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
