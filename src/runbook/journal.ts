import type { NetworkMode, RuntimeFlavor } from '../node/state/types.js';

// The run's record: what the node was like before (what rollback restores), what we changed, where backups went.
// It lives on the node's Lease, so a killed run resumes from it.
export const STEP_NAMES = [
  'preflight',
  'cordon',
  'drain',
  'stop-kubelet',
  'teardown-sandboxes',
  'clear-state',
  'upgrade-runtime',
  'start-kubelet',
  'uncordon',
  'verify',
] as const;
export type StepName = (typeof STEP_NAMES)[number];

export interface PriorState {
  unschedulable: boolean;
  kubeletActive: boolean;
  packages: Record<string, string>;
  /** Runtime units that were active, in start order. */
  runtimeServices: string[];
  flavor: RuntimeFlavor;
  networkMode: NetworkMode;
}

export type StepStatus = 'done' | 'nothing-to-do' | 'failed' | 'rolled-back' | 'planned';

export interface StepRecord {
  status: StepStatus;
  startedAt: string;
  finishedAt?: string;
  summary: string;
}

export interface Journal {
  version: 1;
  runId: string;
  node: string;
  holder: string;
  startedAt: string;
  updatedAt: string;
  status: 'running' | 'completed' | 'rolled-back' | 'rollback-failed';
  targets: Record<string, string>;
  prior?: PriorState;
  /** True only if this run set spec.unschedulable: rollback and uncordon undo only what we did. */
  cordonedByUs: boolean;
  steps: Partial<Record<StepName, StepRecord>>;
  backups: string[];
  error?: string;
}

export function newJournal(runId: string, node: string, holder: string, targets: Record<string, string>): Journal {
  const now = new Date().toISOString();
  return { version: 1, runId, node, holder, startedAt: now, updatedAt: now, status: 'running', targets, cordonedByUs: false, steps: {}, backups: [] };
}

export function parseJournal(text: string | undefined): Journal | undefined {
  if (!text) return undefined;
  try {
    const j = JSON.parse(text) as Journal;
    return j.version === 1 && typeof j.runId === 'string' ? j : undefined;
  } catch {
    return undefined;
  }
}

/** A run that neither finished nor rolled back: the next run resumes it. */
export function isUnfinished(journal: Journal | undefined): journal is Journal {
  return journal?.status === 'running';
}
