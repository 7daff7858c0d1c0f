// What the runner tells its watchers (the progress display, the Pulumi provider's log): logging as data.
export type RunEvent =
  | { type: 'run'; phase: 'start'; node: string; runId: string; dryRun: boolean; resuming: boolean; mode: 'run' | 'resume' | 'rollback' }
  | { type: 'step'; phase: 'start'; step: string; index: number; total: number; title: string }
  | { type: 'step'; phase: 'planned' | 'nothing-to-do' | 'done' | 'done-earlier'; step: string; summary: string; durationMs: number; actions: string[] }
  | { type: 'step'; phase: 'failed' | 'stopped'; step: string; error: string; durationMs: number }
  | { type: 'progress'; step: string; message: string }
  | { type: 'rollback'; phase: 'start' | 'done' | 'failed' | 'skipped'; step: string; summary: string };

export type EventSink = (event: RunEvent) => void;
