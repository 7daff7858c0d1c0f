import { Cluster } from '../cluster/api.js';
import { RunbookError, usageError } from '../errors.js';
import { runThroughAgent } from '../agent/caller.js';
import { readSpec, type RunSpec } from '../agent/spec.js';
import { HOOK_FLAGS } from '../runbook/hooks.js';
import { CONNECT_OPTIONS } from './connect.js';
import type { CliIo } from './io.js';

// --via agent: a command run on the node by its agent instead of over SSH; the caller needs only its kubeconfig
// (src/agent/caller.ts does the rest). What the run does goes as the MaintenanceRun's typed fields.

export interface ViaAgent {
  spec: Omit<RunSpec, 'requestedBy'>;
  kubeconfig?: string;
  context?: string;
  stop: AbortSignal;
  io: CliIo;
}

/** Flags a run through the agent does not carry, and why: the node's owner, not a requester, chooses these. */
const NOT_CARRIED: Record<string, string> = {
  ...Object.fromEntries(Object.values(HOOK_FLAGS).map((f) => [f, 'a hook is a command, and the agent runs only the runbook (run hooks over SSH)'])),
  'reboot-command': 'it is a command, and the agent runs only the runbook (its runs reboot with systemctl reboot)',
  'reboot-sentinel-command': "it is a command, and the agent runs only the runbook (its runs read Debian's /var/run/reboot-required)",
  'textfile-dir': 'it is a folder the run would write in as root, which a request may not choose (the agent writes its runs\' metrics in /var/lib/node-maint/agent/metrics)',
  'lease-namespace': "the agent's policy sets where its runs keep their Lease",
  'smoke-namespace': "the agent's policy sets where its runs start the smoke pod",
  ...Object.fromEntries(Object.keys(CONNECT_OPTIONS).map((f) => [f, 'the agent runs on the node itself'])),
};

/** Refuses, by name and before the cluster is asked, a flag the agent does not carry. */
export function refuseNotCarried(flags: Record<string, unknown>): void {
  const given = Object.keys(NOT_CARRIED).find((f) => flags[f] !== undefined);
  if (given) throw usageError(`--${given} does not go with --via agent: ${NOT_CARRIED[given]}`);
}

export async function runViaAgent(v: ViaAgent): Promise<number> {
  const say = (line: string) => v.io.stderr(`node-maint: ${line}\n`);
  // The agent's own check of the fields, made here first: a mistake is said before anything is asked of the cluster.
  readSpec({ ...v.spec, requestedBy: 'this caller' }, v.spec.nodeName);
  const cluster = await Cluster.connect({ kubeconfig: v.kubeconfig, context: v.context, onRetry: say });
  return runThroughAgent(cluster, v);
}

export const VIA_OPTION = { via: { type: 'string' } } as const;

/** --via: true for the agent; ssh (the default) and the other transports reach the node from here. */
export function viaAgent(value: unknown): boolean {
  if (value === undefined || value === 'ssh') return false;
  if (value === 'agent') return true;
  throw new RunbookError('usage', `--via: want ssh or agent, got ${JSON.stringify(value)}`);
}

export const VIA_HELP = `  --via ssh|agent              (ssh) agent: run on the node by its node-maint agent (runbooks/agent/), with no SSH:
                               only the kubeconfig is needed (and the right to ask: runbooks/agent/requester.yaml);
                               the agent runs only what its policy allows; the run goes on if this command dies, and
                               the same command attaches to it again`;
