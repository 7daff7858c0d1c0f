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
  stopped: 18,
  rebootTimeout: 19,
  otherRun: 20,
} as const;
export type ExitCodeName = keyof typeof ExitCode;

/** What each exit code of upgrade-node means: its --help and the README's table are this. */
export const EXIT_CODE_MEANINGS: Record<ExitCodeName, string> = {
  ok: 'done, nothing to do, the dry run planned, or --rollback found nothing to roll back',
  internal: 'internal error',
  usage: 'usage: unknown flag, malformed version, invalid node name, shell metacharacters, an unfinished run toward other versions',
  nodeNotFound: 'node not found',
  nodeNotReady: 'node not Ready',
  unreachable: 'node or API unreachable (also mid-run: the API did not answer past `--outage-tolerance`, so the run stopped where it was, its Lease held by nobody else; the same command resumes it)',
  hostKey: 'host key not in known_hosts, different, revoked, or a certificate (also mid-run, say a node re-imaged across its reboot: nothing more is sent to it, nothing rolled back, it stays cordoned; the same command finishes once known_hosts has the key it really has)',
  authentication: 'SSH authentication refused (mid-run: as for 6)',
  blockedByBudget: 'drain blocked by a PodDisruptionBudget (found in preflight, nothing changed)',
  locked: 'another live run holds the node\'s Lease, or a holder declares a longer Lease than a run waits (a fence by hand): nothing changed',
  preflight: 'preflight refused: version unavailable, runtime or crictl missing, control-plane node, low disk, dpkg unsound or locked, pods that cannot be drained in time, CNI cache entries that cannot be replayed, an IPAM the proof cannot read, kubelet outside a systemd unit, an API permission the run needs missing (runbooks/rbac.yaml)',
  stepFailedRolledBack: 'a step failed before the point of no return and the node was rolled back (also: an unfinished run rolled back with --rollback)',
  rollbackFailed: 'a step failed and the rollback failed too: the node is left cordoned if its runtime or kubelet could not be restored; run the same command again to retry the rollback',
  leaksFound: 'the leak audit found leaks: before uncordon the node stays cordoned on the new runtime (reclaim, then run the same command to finish); after uncordon they are reported',
  afterPointOfNoReturn: 'a failure after the node was uncordoned: it is upgraded and serving, nothing was downgraded; run the same command to finish the check',
  couldNotAudit: 'the leak audit could not look (runtime not answering, API read failed): never reported as clean',
  leaseLost: 'the node\'s Lease was taken by another run: this run stopped changing the node at once',
  timeout: 'a command on the node timed out (and was stopped there)',
  rebootTimeout: 'the node did not come back from the run\'s reboot within --reboot-timeout: it stays cordoned, nothing was rolled back (the node cannot be reached); once it is back, the same command finishes the run',
  otherRun: 'through the agent: a run another command asked was under way on the node, and this caller followed it to its end; the run asked now did not start (run the same command again)',
  stopped: 'stopped by the operator (SIGINT, SIGTERM, SIGHUP; a cancelled `pulumi up`, or its `pulumi` gone) at a safe point: nothing new was started, the runtime was not left stopped by the stop, the Lease is free; the report says the node\'s state; the same command continues, --rollback undoes',
};

/** The exit codes as help text: "  0  done, ..." lines. */
export function exitCodeLines(): string[] {
  return (Object.keys(ExitCode) as ExitCodeName[]).map((name) => `  ${String(ExitCode[name]).padStart(2)}  ${EXIT_CODE_MEANINGS[name]}`);
}

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
