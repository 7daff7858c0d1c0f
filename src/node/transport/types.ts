import { RunbookError } from '../../errors.js';

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /** The command is ended on the node after this long, with everything it started. Every command has one. */
  timeoutMs?: number;
  /** What the command does, in a few words, where its first line does not say (the records of running commands). */
  what?: string;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 120_000;

/** How long after the node's own timeout the client gives up waiting for an answer. */
export const ANSWER_GRACE_MS = 20_000;

/**
 * What every transport runs on the node: the script arrives on stdin and is read whole before it runs (so it may be
 * any size and nothing in it reads the rest as input). `timeout` puts it in its own process group and, when the time
 * is up, signals the whole group (apt, dpkg, maintainer scripts), then kills it 10 s later. A lost session, or our
 * side gone (a stopped run's process ended), does not cut the work short: SIGHUP and SIGPIPE are ignored, and the
 * command writes into files on the node, handed back once it ended, so that no write of apt's or dpkg's into a pipe
 * nobody reads any more kills it halfway. A command ends by finishing or by its own timeout.
 */
export function remoteShell(timeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): string {
  const script = 'trap "" HUP PIPE; o=$(mktemp) && e=$(mktemp) || exit 125; s=$(cat); (eval "$s") >"$o" 2>"$e" </dev/null; r=$?; cat "$o"; cat "$e" >&2; rm -f "$o" "$e"; exit $r';
  return `timeout -k 10 ${Math.max(1, Math.ceil(timeoutMs / 1000))} sh -c '${script}'`;
}

/** A command that ran out of time (on the node, or waiting for the node's answer): never reported as unreachable. */
export class CommandTimeoutError extends RunbookError {
  constructor(target: string, timeoutMs: number, onNode: boolean) {
    super(
      'timeout',
      onNode
        ? `command on ${target} timed out after ${Math.round(timeoutMs / 1000)}s and was stopped on the node`
        : `no answer from ${target} within ${Math.round((timeoutMs + ANSWER_GRACE_MS) / 1000)}s (the command stops on the node by its own timeout)`,
    );
  }
}

/** The connection to the node broke: before a command started, or during one (which goes on there to its end). */
export class ConnectionLostError extends RunbookError {
  constructor(target: string, started: boolean, cause?: unknown) {
    super(
      'unreachable',
      started
        ? `${target}: the connection was lost during the command (it goes on on the node until it ends or times out)`
        : `${target}: the connection was lost before the command could start`,
      { cause },
    );
  }
}

/** Exit 124 (TERM) or 137 (KILL) from the wrapper's timeout, once the time was really up. */
export function timedOutOnNode(code: number, elapsedMs: number, timeoutMs: number): boolean {
  return (code === 124 || code === 137) && elapsedMs >= timeoutMs - 1_000;
}

/** Runs shell scripts on a node as root: ssh (sudo -n for non-root users), docker exec, or this machine. */
export interface Transport {
  /** Where commands go, for reports: "ssh maint@127.0.0.1:2222", "docker exec tb-fleet-1", "local". */
  readonly target: string;
  exec(script: string, options?: ExecOptions): Promise<ExecResult>;
  close(): Promise<void>;
}

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
    const stderr = result.stderr.trim().split('\n').slice(-6).join(' | ');
    super(`command on ${target} exited ${result.code}: ${firstLine.trim().slice(0, 120)}${stderr ? ` (${stderr})` : ''}`);
    this.name = 'CommandError';
    this.result = result;
  }
}
