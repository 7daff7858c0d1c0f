import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalTransport } from '../../../src/node/transport/local.js';
import { remoteShell, run } from '../../../src/node/transport/types.js';
import { RunbookError } from '../../../src/errors.js';

const alive = (marker: string) => {
  try {
    return execFileSync('pgrep', ['-f', marker]).toString().trim() !== '';
  } catch {
    return false;
  }
};

describe('a command that outlives its timeout', () => {
  it('is ended on the node with everything it started, and reported as a timeout, not as unreachable', async () => {
    const marker = `nm-timeout-${process.pid}-${Date.now()}`;
    const started = Date.now();
    const error = await run(new LocalTransport(), `sh -c 'sleep 300; : ${marker}' & sh -c 'sleep 300; : ${marker}' & wait`, { timeoutMs: 2_000 }).catch((e) => e);
    expect(error).toBeInstanceOf(RunbookError);
    expect((error as RunbookError).code).toBe('timeout');
    expect((error as Error).message).toMatch(/timed out after 2s and was stopped on the node/);
    expect(Date.now() - started).toBeLessThan(15_000);
    // Both children were in the command's process group: none is left.
    await new Promise((r) => setTimeout(r, 300));
    expect(alive(marker)).toBe(false);
  });
  it('a command that exits 124 on its own before its time is not a timeout', async () => {
    const result = await new LocalTransport().exec('exit 124', { timeoutMs: 10_000 });
    expect(result.code).toBe(124);
  });
  it('keeps running when the session hangs up (SIGHUP ignored)', async () => {
    expect(await run(new LocalTransport(), 'kill -HUP $$; echo still-here')).toBe('still-here\n');
  });
  it('goes on to its end when our side is gone, whatever it writes after (no SIGPIPE from a pipe nobody reads)', async () => {
    const done = join(mkdtempSync(join(tmpdir(), 'wrapper-')), 'done');
    const child = spawn('sh', ['-c', remoteShell(20_000)], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    child.stdin.end(`sleep 0.5; for i in $(seq 1 3000); do echo line $i; echo err $i >&2; done; touch ${done}`);
    // A stopped run's process gone: nobody reads the command's output any more.
    child.stdout.destroy();
    child.stderr.destroy();
    const until = Date.now() + 15_000;
    while (!existsSync(done) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(done)).toBe(true);
  });
});
