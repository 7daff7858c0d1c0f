import { STATE_DIRS } from '../node/state/gather.js';
import type { NodeState } from '../node/state/types.js';
import { backupLines, backupPath, writtenBackup } from '../node/backup.js';
import { quote, run } from '../node/transport/index.js';
import { RunbookError } from '../errors.js';
import type { Step, StepPlan } from '../runbook/step.js';
import { leftAloneLine } from '../node/cni/owners.js';

export interface ClearPlan extends StepPlan {
  files: string[];
  backup: string;
}

const CLEARED_DIRS = () => [
  STATE_DIRS.checkpoints['cri-dockerd'],
  STATE_DIRS.checkpoints.dockershim,
  ...STATE_DIRS.cniCaches,
];

/** What would leak if left: checkpoints, host-local reservations (not the lock), CNI cache entries; Kubernetes' only. */
export function filesToClear(state: NodeState): string[] {
  return [
    ...state.checkpoints.map((c) => c.path),
    ...state.ipam.flatMap((d) => [...d.reservations.map((r) => r.path), ...Object.keys(d.lastReserved).map((n) => `${d.path}/${n}`)]),
    ...state.cniCache.map((e) => e.path),
  ];
}

const batches = <T>(items: T[], size: number): T[][] => Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

function perDirectory(files: string[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const f of files) {
    const dir = f.slice(0, f.lastIndexOf('/'));
    counts.set(dir, (counts.get(dir) ?? 0) + 1);
  }
  return [...counts];
}

/**
 * Clears runtime checkpoints, the CNI IPAM directories and the CNI caches, backed up on the node first (a tarball
 * under /var/lib/node-maint/backups/<run>). Refused while any sandbox exists: their state is still in use.
 */
export const clearState: Step<ClearPlan> = {
  name: 'clear-state',
  title: 'Clear leftover state',
  undoneByBoot: true,
  undo: 'nothing restored: putting the files back would bring the leaks back; the backup stays on the node',
  async plan(ctx) {
    const state = await ctx.nodeState({ fresh: true });
    const files = filesToClear(state);
    const backup = backupPath(ctx.runId, 'state');
    const leftAlone = leftAloneLine(state);
    return {
      files,
      backup,
      actions: files.length > 0 ? [`back up to ${backup}`, ...perDirectory(files).map(([dir, n]) => `remove ${n} file(s) from ${dir}`)] : [],
      summary: `${files.length > 0 ? `${files.length} file(s) to back up and clear` : 'nothing left to clear'}${leftAlone ? `; ${leftAlone}` : ''}`,
      detail: { files, backup, leftAlone: [...state.foreign.cniCache.map((e) => e.path), ...state.foreign.ipam.map((d) => d.path)] },
    };
  },
  async apply(ctx, plan) {
    const state = await ctx.nodeState({ fresh: true });
    if (!state.runtimeReachable || state.sandboxes.length > 0) {
      throw new RunbookError('preflight', `refusing to clear state: ${state.runtimeReachable ? `${state.sandboxes.length} sandbox(es) still exist` : 'the runtime does not answer, so running sandboxes cannot be ruled out'}`);
    }
    const ipamDirs = state.ipam.map((d) => d.path);
    // Backed up whole (other CNI users' files too: a backup never hurts), then only Kubernetes' files removed, read
    // afresh: other users' entries and reservations, and host-local's lock, stay.
    const files = filesToClear(state);
    const script = [
      'set -e',
      ...backupLines(plan.backup, [...CLEARED_DIRS(), ...ipamDirs]),
      ...batches(files, 200).map((batch) => `rm -f ${batch.map((p) => quote(p)).join(' ')}`),
    ].join('\n');
    const written = writtenBackup(await run(ctx.transport, script, { timeoutMs: ctx.options.commandTimeoutSeconds * 1000 }));
    if (written) {
      ctx.journal.backups.push(written);
      await ctx.saveJournal();
    }
    const leftAlone = leftAloneLine(state);
    return `${files.length} file(s) cleared, backup ${plan.backup}${leftAlone ? `; ${leftAlone}` : ''}`;
  },
  async verify(ctx) {
    const left = filesToClear(await ctx.nodeState({ fresh: true }));
    if (left.length > 0) throw new Error(`${left.length} file(s) left: ${left.slice(0, 5).join(', ')}`);
  },
};
