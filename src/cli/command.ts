import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ExitCode, RunbookError } from '../errors.js';
import { validateNodeName } from '../runbook/options.js';
import { outputFormat, reportFailure, type CliIo, type OutputFormat } from './io.js';

// What every entry point does the same way: strict flags (a typo is a usage error), --help, --output, the cluster
// flags, and failures turned into a line on stderr (JSON on stdout with --output json) and an exit code.
type Options = NonNullable<ParseArgsConfig['options']>;
export type Flags = Record<string, string | boolean | undefined> & { output?: string; kubeconfig?: string; context?: string };

const COMMON: Options = {
  output: { type: 'string' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

export async function runCommand(
  argv: string[],
  io: CliIo,
  spec: { options: Options; help: string; outputs?: readonly OutputFormat[] },
  body: (flags: Flags, positionals: string[], json: boolean, format: OutputFormat) => Promise<number>,
): Promise<number> {
  let json = false;
  // Work that nothing will ever settle leaves the event loop empty, and the process would end with exit 0 and no word:
  // it fails closed instead, saying so (found when an SSH server closed the connection at login unanswered).
  const unsettled = () => {
    io.stderr('node-maint: internal error: the command stopped with its work unfinished and no answer (a wait nothing ends); nothing more was done\n');
    process.exitCode = ExitCode.internal;
  };
  process.once('beforeExit', unsettled);
  try {
    const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { ...spec.options, ...COMMON } });
    const flags = values as Flags;
    if (flags.help) {
      io.stdout(`${spec.help}\n`);
      return ExitCode.ok;
    }
    const format = outputFormat(flags.output, spec.outputs);
    json = format === 'json';
    return await body(flags, positionals, json, format);
  } catch (error) {
    return reportFailure(error, json, io);
  } finally {
    process.off('beforeExit', unsettled);
  }
}

export function singleNode(positionals: string[]): string {
  if (positionals.length !== 1) throw new RunbookError('usage', `expected exactly one NODE argument (got ${positionals.length}); see --help`);
  return validateNodeName(positionals[0]!);
}
