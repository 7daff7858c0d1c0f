export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /** Kills the command and rejects after this long. Every command has one. */
  timeoutMs?: number;
}

/**
 * What every transport runs on the node: the script arrives on stdin and is read whole before it runs, so it may be
 * any size (a single argument is capped at 128 KiB) and nothing in it can read the rest of it as input.
 */
export const REMOTE_SHELL = `sh -c 'eval "$(cat)"'`;

/** Runs shell scripts on a node as root: ssh (sudo -n for non-root users), docker exec, or this machine. */
export interface Transport {
  /** Where commands go, for reports: "ssh maint@127.0.0.1:2222", "docker exec tb-fleet-1", "local". */
  readonly target: string;
  exec(script: string, options?: ExecOptions): Promise<ExecResult>;
  close(): Promise<void>;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 120_000;

/** Runs a script and throws unless it exits 0; the error names the target and carries stderr. */
export async function run(transport: Transport, script: string, options?: ExecOptions): Promise<string> {
  const result = await transport.exec(script, options);
  if (result.code !== 0) {
    throw new CommandError(transport.target, script, result);
  }
  return result.stdout;
}

export class CommandError extends Error {
  readonly result: ExecResult;
  constructor(target: string, script: string, result: ExecResult) {
    const firstLine = script.split('\n').find((l) => l.trim() !== '') ?? script;
    const stderr = result.stderr.trim().split('\n').slice(-3).join(' | ');
    super(`command on ${target} exited ${result.code}: ${firstLine.trim().slice(0, 120)}${stderr ? ` (${stderr})` : ''}`);
    this.name = 'CommandError';
    this.result = result;
  }
}
