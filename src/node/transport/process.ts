import { spawn } from 'node:child_process';
import { RunbookError } from '../../runbook/errors.js';
import { DEFAULT_COMMAND_TIMEOUT_MS, type ExecOptions, type ExecResult } from './types.js';

/** Runs a local program (argv, no shell), with a timeout that kills it. Shared by the docker-exec and local transports. */
export function runProcess(argv: string[], options: ExecOptions & { env?: NodeJS.ProcessEnv; stdin?: string } = {}): Promise<ExecResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const errOut: Buffer[] = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new RunbookError('unreachable', `${argv[0]}: command timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => errOut.push(d));
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new RunbookError('unreachable', `cannot run ${argv[0]}`, { cause: err }));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(errOut).toString('utf8') });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
  });
}
