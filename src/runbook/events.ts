import type { StepName } from './journal.js';

// What the runner tells its watchers (the progress display, the Pulumi provider's log): logging as data.
export type RunEvent =
  | { type: 'run'; phase: 'start'; node: string; runId: string; dryRun: boolean; resuming: boolean }
  | { type: 'step'; phase: 'start'; step: StepName; index: number; total: number; title: string }
  | { type: 'step'; phase: 'planned' | 'nothing-to-do' | 'done'; step: StepName; summary: string; durationMs: number; actions: string[] }
  | { type: 'step'; phase: 'failed'; step: StepName; error: string; durationMs: number }
  | { type: 'progress'; step: StepName; message: string }
  | { type: 'rollback'; phase: 'start' | 'done' | 'failed'; step: StepName; summary: string };

export type EventSink = (event: RunEvent) => void;
