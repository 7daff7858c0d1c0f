import { ExitCode } from '../errors.js';

// A node the drain cannot empty (a budget that allows no eviction, or the drain's deadline passed): by default the
// fleet stops there, as AKS's undrainableNodeBehavior "Schedule" does; with "skip" the node, left as it was, is passed
// by and the others go on (AKS's "Cordon", EKS's force without the force).
export type UndrainableBehavior = 'stop' | 'skip';
export const UNDRAINABLE_BEHAVIORS: readonly UndrainableBehavior[] = ['stop', 'skip'];

export const SKIPPED_RESULT = 'skipped-undrainable';
/** A node the window or the pause held: left as it was, not a failure; the next `pulumi up` does it. */
export const HELD_RESULT = 'held';

interface EndedRun {
  exitCode: number;
  error?: { message: string };
  steps: Array<{ name: string; status: string }>;
}

/**
 * Why the run found the node undrainable and left it as it was, or undefined for any other ending. Only two endings
 * qualify: a budget refused in preflight (nothing changed), and a drain that failed and was rolled back in full.
 */
export function undrainableReason(run: EndedRun): string | undefined {
  const why = run.error?.message ?? 'no reason given';
  if (run.exitCode === ExitCode.blockedByBudget) return why;
  const drainFailed = run.steps.some((s) => s.name === 'drain' && s.status === 'failed');
  if (run.exitCode === ExitCode.stepFailedRolledBack && drainFailed) return `the drain did not finish: ${why}`;
  return undefined;
}
