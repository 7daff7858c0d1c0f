import { JOURNAL_ANNOTATION } from '../cluster/lease.js';
import type { Lease } from '../cluster/types.js';
import { runtimeUnits } from '../node/runtime/flavor.js';
import type { NetworkMode, RuntimeFlavor } from '../node/state/types.js';

// The run's record: what the node was like before (what rollback restores), which steps acted (written before they
// act, so a killed run's resume knows), whether the run passed its point of no return, where backups went. It lives
// on the node's Lease, so a killed run resumes from it, from any machine.
export interface PriorState {
  unschedulable: boolean;
  kubeletActive: boolean;
  /** The systemd unit kubelet ran under (from its cgroup); absent in journals written before it was read: kubelet. */
  kubeletUnit?: string;
  packages: Record<string, string>;
  /** Packages apt changes alongside the targets (a newer runc a containerd pulls in), at their versions before: kept and put back as the targets are. */
  alongside?: Record<string, string>;
  /** Packages held (apt-mark hold) before the run: held again after any install, rollback included. */
  held: string[];
  /** Runtime units that were active, in start order. */
  runtimeServices: string[];
  flavor: RuntimeFlavor;
  networkMode: NetworkMode;
}

/** applying: written before the step acts, so a killed run knows the step may have half-changed the node. */
export type StepStatus = 'applying' | 'done' | 'nothing-to-do' | 'failed' | 'stopped' | 'rolled-back' | 'rollback-failed';

export interface StepRecord {
  status: StepStatus;
  startedAt: string;
  finishedAt?: string;
  summary: string;
  /** The node's boot when the step was done (absent in journals written before it was read): a boot undoes some. */
  boot?: string;
}

/** failed: the run stopped before it changed anything. */
export type JournalStatus = 'running' | 'rolling-back' | 'completed' | 'rolled-back' | 'rollback-failed' | 'failed';

export interface Journal {
  version: 2;
  runId: string;
  node: string;
  holder: string;
  startedAt: string;
  updatedAt: string;
  status: JournalStatus;
  targets: Record<string, string>;
  prior?: PriorState;
  /** True only if this run set spec.unschedulable: rollback and uncordon undo only what we did. */
  cordonedByUs: boolean;
  /** Set before the node is made schedulable again: from then on nothing is rolled back, the run only finishes. */
  pointOfNoReturn: boolean;
  steps: Partial<Record<string, StepRecord>>;
  backups: string[];
  /** The .deb files of the prior versions, kept on the node before the install (package to path): what a rollback installs. */
  keptDebs?: Record<string, string>;
  error?: string;
  /**
   * The node's boot before the run rebooted it (written before the reboot is asked), when the node took the reboot
   * command (`asked`), and the boot after: which side of the reboot the node is on.
   */
  reboot?: { before: string; at: string; asked?: string; command?: string; after?: string; neverWentDown?: string };
  /** A reboot command that exited 0 and never rebooted the node (it answered on its boot for all of --reboot-timeout). */
  rebootNotTaken?: { command: string; at: string };
  /** Where and why the operator stopped the run (it stays unfinished: the same command continues, --rollback undoes). */
  stopped?: { at: string; by: string; step: string };
}

export function newJournal(runId: string, node: string, holder: string, targets: Record<string, string>): Journal {
  const now = new Date().toISOString();
  return { version: 2, runId, node, holder, startedAt: now, updatedAt: now, status: 'running', targets, cordonedByUs: false, pointOfNoReturn: false, steps: {}, backups: [] };
}

/** The journal a node's Lease carries, or undefined (no Lease, no journal, or one this version cannot read). */
export const journalOf = (lease: Lease | undefined): Journal | undefined => parseJournal(lease?.metadata.annotations?.[JOURNAL_ANNOTATION]);

export function parseJournal(text: string | undefined): Journal | undefined {
  if (!text) return undefined;
  try {
    const j = JSON.parse(text) as Omit<Journal, 'version' | 'pointOfNoReturn'> & { version: number; pointOfNoReturn?: boolean };
    if (typeof j.runId !== 'string' || !j.steps) return undefined;
    // A version 1 journal (no point of no return recorded) passed it once its uncordon was done.
    if (j.version === 1) return { ...j, version: 2, pointOfNoReturn: j.steps.uncordon?.status === 'done', prior: j.prior && { ...j.prior, held: j.prior.held ?? [] } };
    return j.version === 2 ? (j as Journal) : undefined;
  } catch {
    return undefined;
  }
}

/** "run R, running" for a run that neither finished nor finished rolling back, else undefined. */
export const describeUnfinished = (journal: Journal | undefined) => (isUnfinished(journal) ? `run ${journal.runId}, ${journal.status}` : undefined);

/** An unfinished run whose node took its reboot command and was not seen back yet: its silence is expected. */
export const rebootInFlight = (journal: Journal | undefined) => isUnfinished(journal) && !!journal.reboot?.asked && !journal.reboot.after;

/** A run that neither finished nor finished rolling back: the next run continues it. */
export function isUnfinished(journal: Journal | undefined): journal is Journal {
  return journal?.status === 'running' || journal?.status === 'rolling-back' || journal?.status === 'rollback-failed';
}

/** A rollback was under way (or failed) when the run stopped: the next run finishes the rollback. */
export function isRollingBack(journal: Journal): boolean {
  return journal.status === 'rolling-back' || journal.status === 'rollback-failed';
}

/** The step finished in an earlier process of this run: it is not done again. */
export function finishedEarlier(journal: Journal, step: string): boolean {
  const status = journal.steps[step]?.status;
  return status === 'done' || status === 'nothing-to-do';
}

/**
 * Of `names` (steps whose effect a boot undoes: kubelet stopped, sandbox networks torn down), those done on another
 * boot than `now` that this run did not ask (a crash, a power cut): not done any more, so done again. After the run's
 * own reboot, or once it started kubelet itself, nothing is: what follows expects a running kubelet.
 */
export function undoneByBoot(journal: Journal, names: readonly string[], now: string | undefined): string[] {
  // From start-kubelet on, a running kubelet is what the run wants: nothing before it is to be done again.
  if (!now || journal.reboot?.asked || journal.steps['start-kubelet']) return [];
  return names.filter((n) => {
    const r = journal.steps[n];
    return r?.status === 'done' && r.boot !== undefined && r.boot !== now;
  });
}

/** Steps that may have changed the node and are not undone yet, newest first: what a rollback undoes. */
export function stepsToUndo(journal: Journal, order: readonly string[]): string[] {
  const acted = new Set<StepStatus>(['applying', 'done', 'failed', 'stopped', 'rollback-failed']);
  return [...order].reverse().filter((name) => acted.has(journal.steps[name]?.status as StepStatus));
}

/** The unit that runs this node's kubelet: the one it ran under before the run, else kubelet.service. */
export const kubeletUnitOf = (journal: Journal) => journal.prior?.kubeletUnit ?? 'kubelet';

/** Every package the run changes, at its version before it: the targets' and what apt changes alongside them. */
export const priorVersions = (prior: PriorState): Record<string, string> => ({ ...prior.packages, ...prior.alongside });

/** The runtime's units the run stops and starts, in start order: those active before it, else the flavor's. */
export const runtimeUnitsOf = (prior: PriorState) => (prior.runtimeServices.length > 0 ? prior.runtimeServices : runtimeUnits(prior.flavor));
