import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseRunningCommands, recordedScript, runningCommandsScript } from '../../src/node/commands.js';
import type { ExecResult, Transport } from '../../src/node/transport/types.js';
import { contextOn } from './runbook/context-on.js';
import { mustHurry, StopSource, stoppedError, withinStopGrace } from '../../src/stop.js';
import { waitUntil } from '../../src/wait.js';

const exec = promisify(execFile);

/** A node whose every command takes `ms`, and which counts what reached it. */
class SlowNode implements Transport {
  readonly target = 'node-1';
  sent: string[] = [];
  constructor(private readonly ms: number) {}
  async exec(script: string): Promise<ExecResult> {
    this.sent.push(script);
    await new Promise((r) => setTimeout(r, this.ms));
    return { code: 0, stdout: '', stderr: '' };
  }
  async close() {}
}


describe('an operator\'s stop', () => {
  it('lets no new change reach the node, while reads (the stop\'s own report) still do', async () => {
    const node = new SlowNode(0);
    const stop = new AbortController();
    const ctx = contextOn(node, stop.signal);
    await ctx.transport.exec('echo change');
    stop.abort('SIGINT');
    await expect(ctx.transport.exec('echo another change')).rejects.toMatchObject({ code: 'stopped', message: 'stopped by SIGINT: no further change was started' });
    await ctx.reader.exec('echo read');
    expect(node.sent.map((s) => s.split('\n').at(-1))).toEqual(['echo change', 'echo read']);
  });

  it('gives a command already on the node its grace to answer, then says it goes on there', async () => {
    const stop = new AbortController();
    const quick = withinStopGrace(new Promise((r) => setTimeout(() => r('answered'), 50)), stop.signal, 'apt', 500);
    const slow = withinStopGrace(new Promise((r) => setTimeout(() => r('late'), 2_000)), stop.signal, 'the install', 300);
    stop.abort('SIGTERM');
    await expect(quick).resolves.toBe('answered');
    await expect(slow).rejects.toMatchObject({ code: 'stopped', message: 'stopped by SIGTERM: the install was still running after 0.3s and goes on on the node until it ends (its own timeout bounds it)' });
  });

  it('ends a wait at once, naming what it waited for', async () => {
    const stop = new AbortController();
    const t0 = Date.now();
    setTimeout(() => stop.abort('SIGHUP'), 100);
    await expect(waitUntil('the node to be Ready', async () => 'NotReady', { timeoutMs: 60_000, intervalMs: 5_000, signal: stop.signal })).rejects.toThrow(
      'stopped by SIGHUP: it gave up waiting for the node to be Ready',
    );
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(stoppedError(stop.signal).exitCode).toBe(18);
  });
});

describe('a process about to be killed (its plugin host closing it, SIGKILL 5 s later)', () => {
  it('waits no longer for a command under way, whatever grace it had', async () => {
    const stop = new StopSource();
    const t0 = Date.now();
    const apt = withinStopGrace(new Promise(() => undefined), stop.signal, 'the install', 15_000);
    stop.ask('the end of its `pulumi` process');
    stop.hurry();
    await expect(apt).rejects.toThrow('the install was still running as the process had to end and goes on on the node');
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(mustHurry(stop.signal)).toBe(true);
  });

  it('hurries only its own stop: another run\'s command keeps its grace', async () => {
    const ending = new StopSource();
    const other = new StopSource();
    const install = withinStopGrace(new Promise((r) => setTimeout(() => r('installed'), 200)), other.signal, 'the install', 5_000);
    other.ask('SIGINT');
    ending.ask('SIGTERM');
    ending.hurry();
    await expect(install).resolves.toBe('installed');
    expect([mustHurry(ending.signal), mustHurry(other.signal), mustHurry(new AbortController().signal)]).toEqual([true, false, false]);
  });

  it('is asked once: the first reason stays', () => {
    const stop = new StopSource();
    stop.ask('SIGINT');
    stop.ask('SIGTERM');
    expect(stop.signal.reason).toBe('SIGINT');
  });
});

describe('the records of a run\'s commands on the node', () => {
  it('name a command while it runs, with its deadline, and go when it ends (real sh; records kept in a scratch dir)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-maint-commands-'));
    const inDir = (script: string) => script.replaceAll('/run/node-maint/commands', dir);
    const child = spawn('sh', ['-c', inDir(recordedScript('run-1', 'sleep 30', 60_000, 'install containerd=2'))]);
    await waitUntil('the record', async () => (readdirSync(dir).length === 1 ? true : 'none'), { timeoutMs: 5_000, intervalMs: 50 });
    const { stdout } = await exec('sh', ['-c', inDir(runningCommandsScript('run-1'))]);
    const [running] = parseRunningCommands(stdout);
    expect(running).toMatchObject({ pid: child.pid, what: 'install containerd=2' });
    expect(running!.deadline * 1000 - Date.now()).toBeGreaterThan(60_000);
    expect(parseRunningCommands((await exec('sh', ['-c', inDir(runningCommandsScript('other-run'))])).stdout)).toEqual([]);
    // Killed by a signal, its shell leaves the record: the reader sees a process that is gone, and removes it.
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    expect(parseRunningCommands((await exec('sh', ['-c', inDir(runningCommandsScript('run-1'))])).stdout)).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    // A command that ends takes its record with it.
    await exec('sh', ['-c', inDir(recordedScript('run-2', 'true', 1_000))]);
    expect(readdirSync(dir)).toEqual([]);
  });
});
