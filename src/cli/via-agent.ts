import { Cluster } from '../cluster/api.js';
import { getNode } from '../cluster/nodes.js';
import { RunbookError } from '../errors.js';
import { runThroughAgent } from '../agent/caller.js';
import { requestArgs, type AgentCommand } from '../agent/protocol.js';
import type { CliIo } from './io.js';

// --via agent: a command run on the node by its agent instead of over SSH; the caller needs only its kubeconfig
// (src/agent/caller.ts does the rest).

export interface ViaAgent {
  command: AgentCommand;
  node: string;
  /** Where the run keeps its Lease (the caller's rights to what the run does are asked there). */
  leaseNamespace: string;
  argv: string[];
  kubeconfig?: string;
  context?: string;
  stop: AbortSignal;
  io: CliIo;
}

export async function runViaAgent(v: ViaAgent): Promise<number> {
  const say = (line: string) => v.io.stderr(`node-maint: ${line}\n`);
  // A flag the agent does not carry is refused before anything is asked of the cluster.
  const args = requestArgs(v.argv);
  const cluster = await Cluster.connect({ kubeconfig: v.kubeconfig, context: v.context, onRetry: say });
  await getNode(cluster, v.node);
  return runThroughAgent(cluster, { ...v, args });
}

export const VIA_OPTION = { via: { type: 'string' } } as const;

/** --via: true for the agent; ssh (the default) and the other transports reach the node from here. */
export function viaAgent(value: unknown): boolean {
  if (value === undefined || value === 'ssh') return false;
  if (value === 'agent') return true;
  throw new RunbookError('usage', `--via: want ssh or agent, got ${JSON.stringify(value)}`);
}

export const VIA_HELP = `  --via ssh|agent              (ssh) agent: run on the node by its node-maint agent (runbooks/agent.yaml), with no SSH:
                               only the kubeconfig is needed; the run goes on if this command dies, and the same
                               command attaches to it again`;

