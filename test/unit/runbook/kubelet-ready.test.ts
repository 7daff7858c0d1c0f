import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Node } from '../../../src/cluster/types.js';
import type { RunContext } from '../../../src/runbook/step.js';
import type { Transport } from '../../../src/node/transport/types.js';
import { KUBELET_OR_BOOT_STARTED_SCRIPT, startKubelet, waitUntilNodeReady } from '../../../src/steps/kubelet.js';

// The sequence CI saw after `systemctl start kubelet`: the node still shows the Ready its kubelet posted before the
// stop while the runtime network is already up; then the started kubelet's first status says NotReady (kubenet has
// no netConfig yet); then Ready. Only the last one is an answer.

/** A fake node for both the step's changes and its reads. */
const onBothWays = (node: Transport) => ({ transport: node, reader: node });

function startedKubelet(startedAt: number, ipam = 'host-local', podCIDR = '10.128.0.0/25') {
  const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
  const ready = (status: string, heartbeat: number, message = 'kubelet is posting ready status'): Node => ({
    metadata: { name: 'n1' },
    spec: podCIDR ? { podCIDR } : {},
    status: { conditions: [{ type: 'Ready', status, reason: status === 'True' ? 'KubeletReady' : 'KubeletNotReady', message, lastHeartbeatTime: at(heartbeat) }] },
  });
  const seen = [
    ready('True', startedAt - 30_000),
    ready('True', startedAt - 30_000),
    ready('False', startedAt + 1_000, 'kubenet does not have netConfig'),
    ready('True', startedAt + 3_000),
  ];
  let polls = 0;
  let asked = 0;
  const lines: string[] = [];
  const ctx = {
    options: { node: 'n1', readyTimeoutSeconds: 20 },
    network: async () => ({ ipam }),
    cluster: { get: async () => seen[Math.min(polls++, seen.length - 1)] },
    ...onBothWays({ target: 'test', exec: async () => (asked++, { code: 0, stdout: 'ready\n', stderr: '' }), close: async () => undefined }),
    progress: (line: string) => lines.push(line),
  } as unknown as RunContext;
  return { ctx, lines, polls: () => polls, asked: () => asked };
}

describe('waiting for the node after kubelet starts', () => {
  it('a Ready posted before kubelet started is no answer; the started kubelet\'s own Ready is', async () => {
    const startedAt = Date.now();
    const k = startedKubelet(startedAt);
    const status = await waitUntilNodeReady(k.ctx, Math.floor(startedAt / 1000) * 1000);
    expect(k.polls()).toBe(4);
    expect(status).toContain('Ready True (KubeletReady');
    expect(k.lines[0]).toContain('(posted before kubelet started), runtime network not asked until the node is Ready');
    // The node's runtime is asked once, when the node's own answer is Ready: not at every look.
    expect(k.asked()).toBe(1);
  }, 30_000);

  it('after the run\'s reboot, the kubelet systemd started at boot: the Ready from before the reboot is no answer', async () => {
    const startedAt = Date.now();
    const k = startedKubelet(startedAt);
    // Test 38 saw it: a 5 s reboot, the API still holding the Ready posted before it, the booted kubelet's first status NotReady.
    const ctx = {
      ...k.ctx,
      journal: { prior: { kubeletUnit: 'kubelet' }, reboot: { before: 'b/1', at: '', after: 'b/2' } },
      ...onBothWays({ target: 'test', exec: async (script: string) => ({ code: 0, stdout: script.includes('etimes') ? `${Math.floor(startedAt / 1000)}\n` : 'ready\n', stderr: '' }), close: async () => undefined }),
    } as unknown as RunContext;
    await expect(startKubelet.apply(ctx, { actions: ['wait for PodCIDR, Ready and the runtime network'], summary: '' })).resolves.toContain('Ready True');
    expect(k.polls()).toBe(4);
  }, 30_000);

  it('after the run\'s reboot, a kubelet that fails at every start (no process to date): dated by the boot, so the Ready from before the reboot is still no answer', async () => {
    // The script runs for real, here: no kubelet process on this machine, so PID 1's start dates the boot.
    const bash = (script: string) => ({ code: 0, stdout: execFileSync('bash', ['-c', script], { encoding: 'utf8' }), stderr: '' });
    const booted = Math.floor(Date.now() / 1000) - Number(bash('ps -o etimes= -p 1').stdout.trim());
    // Every status the node shows (Ready, then NotReady, then Ready, one per look) was posted before the boot.
    const k = startedKubelet(booted * 1000 - 30_000);
    const ctx = {
      ...k.ctx,
      options: { node: 'n1', readyTimeoutSeconds: 2 },
      journal: { prior: { kubeletUnit: 'kubelet' }, reboot: { before: 'b/1', at: '', after: 'b/2' } },
      ...onBothWays({ target: 'test', exec: async (script: string) => (script.includes('crictl') ? { code: 0, stdout: 'ready\n', stderr: '' } : bash(script)), close: async () => undefined }),
    } as unknown as RunContext;
    const plan = { actions: ['wait for PodCIDR, Ready and the runtime network'], summary: '' };
    await expect(startKubelet.apply(ctx, plan)).rejects.toThrow(/^timed out .*\(posted before kubelet started\)/);
  });

  it('after the run\'s reboot, a node without ps dates the kubelet by its time now; an answer that is no time fails the step', async () => {
    // Only date and head on PATH (the script's pidof and ps are missing): the node's time now, never nothing.
    const bin = mkdtempSync(join(tmpdir(), 'no-ps-'));
    for (const tool of ['date', 'head']) symlinkSync(execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(bin, tool));
    const now = Math.floor(Date.now() / 1000);
    const printed = Number(execFileSync('/bin/bash', ['-c', KUBELET_OR_BOOT_STARTED_SCRIPT], { encoding: 'utf8', env: { PATH: bin } }).trim());
    rmSync(bin, { recursive: true });
    expect(printed - now).toBeGreaterThanOrEqual(0);
    expect(printed - now).toBeLessThan(5);
    // A node that answers something else: the step fails at once, naming what it got, instead of taking any Ready.
    const k = startedKubelet(Date.now());
    const ctx = {
      ...k.ctx,
      journal: { prior: { kubeletUnit: 'kubelet' }, reboot: { before: 'b/1', at: '', after: 'b/2' } },
      ...onBothWays({ target: 'test', exec: async () => ({ code: 0, stdout: 'bash: ps: Permission denied\n', stderr: '' }), close: async () => undefined }),
    } as unknown as RunContext;
    await expect(startKubelet.apply(ctx, { actions: ['wait for PodCIDR, Ready and the runtime network'], summary: '' })).rejects.toThrow(/could not tell when kubelet or the node's boot started \("bash: ps: Permission denied"\)/);
    expect(k.polls()).toBe(0);
  });

  it('a Ready node whose runtime network is not ready yet is waited for, the runtime asked at each look', async () => {
    const k = startedKubelet(Date.now());
    const answers = ['not-ready', 'not-ready', 'ready'];
    let asked = 0;
    const ctx = { ...k.ctx, ...onBothWays({ target: 'test', exec: async () => ({ code: 0, stdout: `${answers[asked++]}\n`, stderr: '' }), close: async () => undefined }) } as unknown as RunContext;
    expect(await waitUntilNodeReady(ctx)).toContain('runtime network ready');
    expect(asked).toBe(3);
    expect(k.lines[0]).toMatch(/Ready True .*runtime network not-ready$/);
  }, 30_000);

  it('without a start time (kubelet was already running), the Ready it shows is taken', async () => {
    const k = startedKubelet(Date.now());
    await waitUntilNodeReady(k.ctx);
    expect(k.polls()).toBe(1);
  });

  it('calico-ipam gives addresses from its own blocks: a Ready node with no PodCIDR is ready, said so; host-local waits for one', async () => {
    const calico = startedKubelet(Date.now(), 'calico-ipam', '');
    expect(await waitUntilNodeReady(calico.ctx)).toMatch(/^PodCIDR not used by calico-ipam, Ready True/);
    const hostLocal = startedKubelet(Date.now(), 'host-local', '');
    const ctx = { ...hostLocal.ctx, options: { node: 'n1', readyTimeoutSeconds: 1 } } as unknown as RunContext;
    await expect(waitUntilNodeReady(ctx)).rejects.toThrow(/PodCIDR none/);
  });
});

describe('starting kubelet', () => {
  const node = (heartbeat: number): Node => ({
    metadata: { name: 'n1' },
    spec: { podCIDR: '10.128.0.0/25' },
    status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ok', lastHeartbeatTime: new Date(heartbeat * 1000).toISOString() }] },
  });
  const ctx = (startOutput: { code: number; stdout: string }, heartbeat: number) =>
    ({
      options: { node: 'n1', readyTimeoutSeconds: 2 },
      network: async () => ({ ipam: 'host-local' }),
      journal: { prior: { kubeletUnit: 'kubelet' } },
      cluster: { get: async () => node(heartbeat) },
      ...onBothWays({ target: 'test', exec: async (script: string) => (script.includes('systemctl start') ? { ...startOutput, stderr: 'Unit kubelet.service not found.' } : { code: 0, stdout: 'ready\n', stderr: '' }), close: async () => undefined }),
      progress: () => undefined,
    }) as unknown as RunContext;
  const plan = { actions: ['systemctl start kubelet'], summary: '' };

  it('a start that fails fails the step (the start time read after it is no excuse)', async () => {
    await expect(startKubelet.apply(ctx({ code: 1, stdout: '1000\n' }, 2000), plan)).rejects.toThrow(/not found/);
  });

  it('a kubelet systemd had already started is dated by its process: its Ready from before the start call counts', async () => {
    // The start call at 1000 found kubelet running since 900 (Restart=); its Ready, posted at 950, is its own.
    await expect(startKubelet.apply(ctx({ code: 0, stdout: '1000\n900\n' }, 950), plan)).resolves.toContain('Ready True');
  });
});
