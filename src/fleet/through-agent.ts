import { runThroughAgent } from '../agent/caller.js';
import { requestArgs } from '../agent/protocol.js';
import type { Cluster } from '../cluster/api.js';
import { RunbookError } from '../errors.js';
import type { RunReport } from '../runbook/report.js';
import type { NodeUpgradeInputs } from './apply.js';

// A fleet node with `access: agent`: its run is asked of the node's agent with the stack's credentials (the run
// itself acts as the agent's node-maint), with the flags the fleet's config makes, and followed to its JSON report.

/** The upgrade-node flags of the node's inputs: what the run does, never how the node is reached. */
export function agentRunArgs(inputs: NodeUpgradeInputs): string[] {
  const d = inputs.drain;
  const targets = Object.entries(inputs.targets).map(([p, v]) => `${p}=${v}`).join(',');
  const reboot = inputs.reboot && inputs.reboot.policy !== 'never' ? [inputs.reboot.policy === 'always' ? '--reboot' : '--reboot-if-required', '--reboot-timeout', `${inputs.reboot.timeoutSeconds}s`] : [];
  return requestArgs([
    inputs.node, '--output', 'json',
    ...(targets ? ['--to', targets] : []),
    ...reboot,
    ...(d.ignoreDaemonSets ? ['--ignore-daemonsets'] : []), ...(d.deleteEmptyDirData ? ['--delete-emptydir-data'] : []), ...(d.force ? ['--force'] : []),
    // -1 (each pod's own grace) as --flag=value: a value that starts with a dash is not taken as one otherwise.
    `--grace-period=${d.gracePeriodSeconds}`, '--timeout', `${d.timeoutSeconds}s`, '--skip-wait-for-delete-timeout', `${d.skipWaitForDeleteTimeoutSeconds}s`,
    '--lease-namespace', inputs.leaseNamespace,
    ...(inputs.allowControlPlane ? ['--allow-control-plane'] : []), ...(inputs.allowNoRollback ? ['--allow-no-rollback'] : []),
  ]);
}

export async function upgradeThroughAgent(cluster: Cluster, inputs: NodeUpgradeInputs, log: (line: string) => void, stop: AbortSignal): Promise<RunReport> {
  let stdout = '';
  let partial = '';
  const io = {
    stdout: (text: string) => void (stdout += text),
    // Whole lines to the engine's log, each under the node's name, as over SSH.
    stderr: (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) log(`[${inputs.node}] ${line.replace(/^node-maint: /, '')}`);
    },
  };
  const exit = await runThroughAgent(cluster, { command: 'upgrade-node', node: inputs.node, args: agentRunArgs(inputs), leaseNamespace: inputs.leaseNamespace, stop, io });
  try {
    return JSON.parse(stdout) as RunReport;
  } catch {
    throw new RunbookError('preflight', `the run on ${inputs.node} through its agent ended with exit ${exit} and no report${partial ? `: ${partial}` : ''}`);
  }
}
