import { STATE_DIRS } from './state/gather.js';
import { command, quote } from './transport/quote.js';

/** Where a run keeps what it clears, on the node: one tarball per attempt, so a resumed run never overwrites one. */
export function backupPath(runId: string, what: string): string {
  return `${STATE_DIRS.backups}/${runId}/${what}-${Date.now()}.tgz`;
}

/**
 * Shell lines that save these files and directories (those that exist) into a tarball, paths kept from /, and fail
 * the script (set -e) if the tarball cannot be written: nothing is cleared without its backup. Prints "backup PATH"
 * when it wrote one.
 */
export function backupLines(tarball: string, paths: string[]): string[] {
  return [
    `backup=${command(tarball)}`,
    'mkdir -p "$(dirname "$backup")"',
    `existing=""; for p in ${paths.map((p) => quote(p)).join(' ')}; do [ -e "$p" ] && existing="$existing \${p#/}"; done`,
    'if [ -n "$existing" ]; then tar -C / -czf "$backup" $existing; echo "backup $backup"; fi',
  ];
}

/** The tarball a script of backupLines wrote, from its output. */
export const writtenBackup = (output: string) => /^backup (\S+)$/m.exec(output)?.[1];
