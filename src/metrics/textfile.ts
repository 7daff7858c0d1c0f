import type { Cluster } from '../cluster/api.js';
import { usageError } from '../errors.js';
import { settledLiveAudit } from '../leaks/index.js';
import { command } from '../node/transport/quote.js';
import { run, type Transport } from '../node/transport/types.js';
import type { RunReport } from '../runbook/report.js';
import { auditMetrics } from './audit.js';
import { runMetrics } from './run.js';
import { AUDIT_TEXTFILE, isTextfileDir, RUN_TEXTFILE } from './textfile-dir.js';
import { mustHurry } from '../stop.js';

// Files for node-exporter's textfile collector on the node (Debian: /var/lib/prometheus/node-exporter): written
// whole and renamed into place, so a scrape never reads half a file.
export { AUDIT_TEXTFILE, RUN_TEXTFILE };

export function validateTextfileDir(dir: string, flag = '--textfile-dir'): string {
  if (!isTextfileDir(dir)) throw usageError(`invalid ${flag} ${JSON.stringify(dir)}: expected an absolute path of letters, digits, '.', '_', '-' and '/'`);
  return dir;
}

export async function writeTextfile(transport: Transport, dir: string, name: string, text: string): Promise<string> {
  const path = `${dir}/${name}`;
  const tmp = `${dir}/.${name}.tmp`;
  await run(transport, [
    'set -e',
    `mkdir -p ${command(dir)}`,
    `printf %s ${command(Buffer.from(text).toString('base64'))} | base64 -d > ${command(tmp)}`,
    `chmod 0644 ${command(tmp)}`,
    `mv -f ${command(tmp)} ${command(path)}`,
  ].join('\n'));
  return path;
}

/**
 * After a run: its result and step durations, and a fresh audit of the node, as textfiles. Metrics never fail a run:
 * a file that cannot be written is said in the log. A run that lost its Lease writes nothing (the node is another's).
 */
export async function publishRunMetrics({ cluster, transport, report, dir, log, stop }: { cluster: Cluster; transport: Transport; report: RunReport; dir: string; log: (line: string) => void; stop?: AbortSignal }): Promise<void> {
  if (report.dryRun || report.result === 'lease-lost' || (stop && mustHurry(stop))) return;
  try {
    await writeTextfile(transport, dir, RUN_TEXTFILE, await runMetrics(report));
    // A stopped run ends promptly: the node is mid-maintenance, and the run that continues it audits it.
    if (report.result === 'stopped') return log(`metrics written to ${dir}/${RUN_TEXTFILE} (stopped: no audit until the run is continued)`);
    // Settled as the run's own verify is: pods come back to the node just now, and a snapshot can catch one half made.
    const audit = await settledLiveAudit({ cluster, transport, node: report.node });
    await writeTextfile(transport, dir, AUDIT_TEXTFILE, await auditMetrics(audit));
    log(`metrics written to ${dir}/${RUN_TEXTFILE} and ${AUDIT_TEXTFILE} (audit: ${audit.verdict})`);
  } catch (e) {
    log(`could not write the metrics textfiles in ${dir}: ${(e as Error).message}`);
  }
}
