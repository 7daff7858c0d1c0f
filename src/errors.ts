// Every failure the runbook reports carries an exit code, so the CLI, the Pulumi provider and CI agree on meaning.
export const ExitCode = {
  ok: 0,
  internal: 1,
  usage: 2,
  nodeNotFound: 3,
  nodeNotReady: 4,
  unreachable: 5,
  hostKey: 6,
  authentication: 7,
  blockedByBudget: 8,
  locked: 9,
  preflight: 10,
  stepFailedRolledBack: 11,
  rollbackFailed: 12,
  leaksFound: 13,
  afterPointOfNoReturn: 14,
  couldNotAudit: 15,
  leaseLost: 16,
  timeout: 17,
} as const;
export type ExitCodeName = keyof typeof ExitCode;

/** A failure with the exit code it maps to and, when it happened in a step, where. */
export class RunbookError extends Error {
  readonly code: ExitCodeName;
  readonly details?: unknown;
  constructor(code: ExitCodeName, message: string, options: { cause?: unknown; details?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'RunbookError';
    this.code = code;
    this.details = options.details;
  }
  get exitCode(): number {
    return ExitCode[this.code];
  }
}

export const usageError = (message: string) => new RunbookError('usage', message);

/** The exit code of any thrown value: ours carry one, anything else is internal. */
export function exitCodeOf(error: unknown): number {
  return error instanceof RunbookError ? error.exitCode : ExitCode.internal;
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error && !error.message.includes(error.cause.message) ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}
