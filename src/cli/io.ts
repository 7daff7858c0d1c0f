import { ExitCode, RunbookError, exitCodeOf, messageOf } from '../errors.js';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const processIo: CliIo = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };

/** Reports a failure the way every entry point does (a line on stderr, JSON on stdout when asked) and gives its exit code. */
export function reportFailure(error: unknown, json: boolean, io: CliIo): number {
  const parseError = (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  const code = error instanceof RunbookError ? error.code : parseError ? 'usage' : 'internal';
  const exitCode = parseError ? ExitCode.usage : exitCodeOf(error);
  if (json) io.stdout(`${JSON.stringify({ result: 'error', exitCode, error: { code, message: messageOf(error) } }, null, 2)}\n`);
  io.stderr(`node-maint: ${messageOf(error)}\n`);
  return exitCode;
}

export type OutputFormat = 'text' | 'json' | 'prometheus';

/** The --output the command was given, among those it offers (text, json, and for audit-node prometheus). */
export function outputFormat(value: string | undefined, offered: readonly OutputFormat[] = ['text', 'json']): OutputFormat {
  if (value === undefined) return 'text';
  if (!(offered as readonly string[]).includes(value)) throw new RunbookError('usage', `--output must be ${offered.join(' or ')} (got ${JSON.stringify(value)})`);
  return value as OutputFormat;
}
