import type { RunEvent } from './events.js';
import { statusLabel } from './report.js';

// The live display: one line per step as it starts and ends, indented progress lines under it. stderr, so stdout
// carries only the report (or the JSON).
export function progressPrinter(write: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): (e: RunEvent) => void {
  let index = 0;
  let total = 0;
  return (e) => {
    switch (e.type) {
      case 'run':
        write(`node-maint: ${e.dryRun ? 'dry run on' : e.mode === 'rollback' ? 'rolling back the unfinished run on' : e.resuming ? 'resuming the run on' : 'maintaining'} node ${e.node} (run ${e.runId.slice(0, 8)})`);
        break;
      case 'step':
        if (e.phase === 'start') {
          index = e.index + 1;
          total = e.total;
          write(`[${String(index).padStart(2)}/${total}] ${e.title} ...`);
        } else if ('error' in e) {
          write(`[${String(index).padStart(2)}/${total}] ${e.phase === 'failed' ? 'FAILED' : 'STOPPED'} after ${(e.durationMs / 1000).toFixed(1)}s: ${e.error}`);
        } else {
          const label = e.phase === 'done-earlier' ? 'done earlier, not again' : statusLabel(e.step, e.phase);
          write(`[${String(index).padStart(2)}/${total}] ${label} in ${(e.durationMs / 1000).toFixed(1)}s: ${e.summary}`);
        }
        break;
      case 'progress':
        write(`        ${e.message}`);
        break;
      case 'rollback':
        write(`  rollback ${e.step}: ${e.phase}${e.summary ? ` (${e.summary})` : ''}`);
        break;
    }
  };
}
