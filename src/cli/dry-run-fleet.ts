import { Cluster } from '../cluster/api.js';
import { getNode } from '../cluster/nodes.js';
import { openTransport } from '../node/transport/index.js';
import { ExitCode, RunbookError } from '../errors.js';
import { DEFAULT_RUN_OPTIONS, parseTargets, validateNodeName } from '../runbook/options.js';
import { renderReport, type RunReport } from '../runbook/report.js';
import { runUpgrade } from '../runbook/runner.js';
import { runCommand } from './command.js';
import { processIo, type CliIo } from './io.js';

export const DRY_RUN_FLEET_HELP = `Usage: zx runbooks/dry-run-fleet.mjs NODE[=CONTAINER]... --to PACKAGE=VERSION[,...] [options]

The CI dry run for clusters whose nodes are containers (kind): the runbook in --dry-run mode on each node through
docker exec (CONTAINER defaults to the node's name), printing each node's plan. Nothing is changed anywhere.
Drain flags are those of a fleet run: --ignore-daemonsets, --delete-emptydir-data and --force are on.

  --docker-host URL     the daemon that runs the node containers   --kubeconfig PATH   --context NAME
  --output text|json

Exit codes: 0 every node planned; otherwise the first failing node's code (see upgrade-node --help).`;

export async function dryRunFleetMain(argv: string[], io: CliIo = processIo): Promise<number> {
  const options = { to: { type: 'string' }, 'docker-host': { type: 'string' } } as const;
  return runCommand(argv, io, { options, help: DRY_RUN_FLEET_HELP }, async (values, positionals, json) => {
    if (positionals.length === 0) throw new RunbookError('usage', 'give at least one NODE[=CONTAINER]');
    const targets = parseTargets(String(values.to ?? ''));
    const cluster = await Cluster.connect({ kubeconfig: values.kubeconfig, context: values.context, onRetry: (line) => io.stderr(`node-maint: ${line}\n`) });
    const reports: RunReport[] = [];
    for (const spec of positionals) {
      const [node = '', container = node] = spec.split('=');
      validateNodeName(node);
      await getNode(cluster, node);
      const transport = await openTransport({ kind: 'docker-exec', container, dockerHost: values['docker-host'] as string | undefined });
      try {
        const report = await runUpgrade({
          options: { ...DEFAULT_RUN_OPTIONS, node, targets, dryRun: true, drain: { ...DEFAULT_RUN_OPTIONS.drain, ignoreDaemonSets: true, deleteEmptyDirData: true, force: true } },
          cluster,
          transport,
        });
        reports.push(report);
        if (!json) io.stdout(`${renderReport(report)}\n\n`);
      } finally {
        await transport.close();
      }
    }
    if (json) io.stdout(`${JSON.stringify(reports, null, 2)}\n`);
    return reports.find((r) => r.exitCode !== 0)?.exitCode ?? ExitCode.ok;
  });
}
