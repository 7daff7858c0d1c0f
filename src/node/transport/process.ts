import { spawn } from 'node:child_process';
import { RunbookError } from '../../errors.js';
import { ANSWER_GRACE_MS, CommandTimeoutError, DEFAULT_COMMAND_TIMEOUT_MS, remoteShell, timedOutOnNode, type ExecOptions, type ExecResult } from './types.js';

/**
 * Runs a script through a local program (`sh -c`, or `docker exec ... sh -c`): argv, no shell on this side, the
 * remote shell wrapper on the far side. Its own process group, so our give-up ends what it started here too.
 */
export function runScript(target: string, argv: (shell: string) => string[], script: string, options: ExecOptions & { env?: NodeJS.ProcessEnv } = {}): Promise<ExecResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  const args = argv(remoteShell(timeoutMs));
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(args[0]!, args.slice(1), { env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    const errOut: Buffer[] = [];
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new CommandTimeoutError(target, timeoutMs, false));
    }, timeoutMs + ANSWER_GRACE_MS);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => errOut.push(d));
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new RunbookError('unreachable', `${target}: cannot run ${args[0]}`, { cause: err }));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const result = { code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(errOut).toString('utf8') };
      if (timedOutOnNode(result.code, Date.now() - started, timeoutMs)) return reject(new CommandTimeoutError(target, timeoutMs, true));
      resolve(result);
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(script);
  });
}
