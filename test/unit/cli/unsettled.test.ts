import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// A command whose work nothing settles (an SSH connection closed at login with neither ready nor an error did this)
// empties the event loop: without a guard the process ends with exit 0 and no word. It fails closed, saying so.
const script = (body: string) => `
import { runCommand } from '${new URL('../../../dist/cli/command.js', import.meta.url).pathname}';
const io = { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) };
// As zx runs an entry point (through import(), not a top-level await Node itself would report unsettled).
runCommand([], io, { options: {}, help: '' }, async () => ${body}).then((code) => (process.exitCode = code));
`;
const run = (body: string) =>
  promisify(execFile)(process.execPath, ['--input-type=module', '-e', script(body)]).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );

describe('a command whose work is never settled', () => {
  it('ends with exit 1 (internal) and says so, never exit 0 in silence', async () => {
    const r = await run('new Promise(() => undefined)');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('node-maint: internal error: the command stopped with its work unfinished and no answer');
  });

  it('a command that answers is left alone', async () => {
    expect(await run('0')).toEqual({ code: 0, stderr: '' });
  });
});
