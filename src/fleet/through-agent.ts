import { runThroughAgent } from '../agent/caller.js';
import type { RunSpec, UpgradeSpec } from '../agent/spec.js';
import type { Cluster } from '../cluster/api.js';
import { DEFAULT_DRAIN_OPTIONS } from '../cluster/drain/filters.js';
import { RunbookError } from '../errors.js';
import type { RunReport } from '../runbook/report.js';
import type { NodeUpgradeInputs } from './apply.js';

// A fleet node with `access: agent`: its run is asked of the node's agent with the stack's credentials (the run
// itself acts as the agent's own run account), as a MaintenanceRun made from the node's inputs, and followed to its
// JSON report.

/** The MaintenanceRun's upgrade fields of the node's inputs: what the run does, never how the node is reached. */
export function agentUpgradeSpec(inputs: NodeUpgradeInputs): UpgradeSpec {
  const d = inputs.drain;
  const drain = Object.fromEntries(Object.entries(d).filter(([k, v]) => v !== DEFAULT_DRAIN_OPTIONS[k as keyof typeof d]));
  const targets = Object.entries(inputs.targets).map(([pkg, version]) => ({ package: pkg, version }));
  const reboot = inputs.reboot && inputs.reboot.policy !== 'never' ? inputs.reboot : undefined;
  return {
    ...(targets.length > 0 ? { targets } : {}),
    ...(reboot ? { reboot: reboot.policy, timeouts: { rebootSeconds: reboot.timeoutSeconds } } : {}),
    ...(Object.keys(drain).length > 0 ? { drain } : {}),
    ...(inputs.allowControlPlane ? { allowControlPlane: true } : {}),
    ...(inputs.allowNoRollback ? { allowNoRollback: true } : {}),
  };
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
  const spec: Omit<RunSpec, 'requestedBy'> = { nodeName: inputs.node, command: 'upgrade', output: 'json', upgrade: agentUpgradeSpec(inputs) };
  const exit = await runThroughAgent(cluster, { spec, stop, io });
  try {
    return JSON.parse(stdout) as RunReport;
  } catch {
    throw new RunbookError('preflight', `the run on ${inputs.node} through its agent ended with exit ${exit} and no report${partial ? `: ${partial}` : ''}`);
  }
}
