import { RunbookError } from '../errors.js';
import { CONNECT_OPTIONS } from '../cli/connect.js';
import { HOOK_FLAGS } from '../runbook/hooks.js';

// How a caller and a node's agent talk with no port and no SSH: one ConfigMap per node in the agent's namespace. The
// caller writes the request (and later, maybe, a stop); the agent starts the run as a unit on the node and writes
// back its unit, its output (the run's own lines, as it prints them) and its exit code. The run's journal and Lease
// are the same as over SSH: a run can be started one way and continued the other.

export const agentConfigMapName = (node: string) => `node-maint-agent-${node}`;
/** The agent's own namespace (runbooks/agent.yaml): its rights to ConfigMaps stop there, never kube-system's. */
export const AGENT_NAMESPACE = 'node-maint';

/** The commands an agent runs, and nothing else: a request is never a shell command. */
export const AGENT_COMMANDS = ['upgrade-node', 'audit-node'] as const;
export type AgentCommand = (typeof AGENT_COMMANDS)[number];

export interface AgentRequest {
  id: string;
  command: AgentCommand;
  /** The command's arguments as the caller gave them, NODE first, without how to reach the node or the cluster. */
  args: string[];
  /** Who asked (the caller's kubeconfig user), and when. */
  by: string;
  at: string;
}

/** The run's unit on the node: its name, the boot it was started on, and how many times (once per boot of the run). */
export interface AgentUnit {
  name: string;
  boot: string;
  starts: number;
}

/** The ConfigMap's data, read. */
export interface AgentExchange {
  request?: AgentRequest;
  /** A stop the caller asked (its reason: "SIGINT"), and whether the agent passed it to the run. */
  stop?: string;
  stopSent?: boolean;
  unit?: AgentUnit;
  /** The run's progress and the agent's own lines: the bytes from `outputFrom` on (older ones dropped past OUTPUT_KEPT). */
  output: string;
  outputFrom: number;
  /** How many bytes of the run's progress file the agent has published. */
  read?: number;
  /** The run's exit code, once it ended; the agent's own lines (why it could not start the run, a reboot) go in `output`. */
  exit?: number;
  /** What the run printed on stdout (its report), once it ended. */
  report?: string;
  /** A caller printed the ended run's report: the next request starts a new run. */
  delivered?: boolean;
}

/** A ConfigMap holds at most 1 MiB: the output's tail is kept, and a caller that fell behind is told what it missed. */
export const OUTPUT_KEPT = 256 * 1024;

/** Flags the caller keeps (each takes a value): how to reach the cluster and the node are the agent's to know. */
const CALLER_ONLY = new Set(['via', 'kubeconfig', 'context', ...Object.keys(CONNECT_OPTIONS)]);

/** Flags a request may not carry, and why: whoever may write a request must not choose what runs, or is written, as root. */
const NOT_CARRIED: Record<string, string> = {
  ...Object.fromEntries(Object.values(HOOK_FLAGS).map((f) => [f, 'a hook is a command, and the agent runs only the runbook (run hooks over SSH)'])),
  'reboot-command': 'it is a command, and the agent runs only the runbook (its runs reboot with systemctl reboot)',
  'reboot-sentinel-command': "it is a command, and the agent runs only the runbook (its runs read Debian's /var/run/reboot-required)",
  'textfile-dir': 'it is a folder the run would write in as root, which a request may not choose (over SSH it may)',
};

/**
 * The request's arguments from the caller's own: NODE and every run flag, without the caller's connection flags.
 * A flag that names a command or a folder to write is refused by name.
 */
export function requestArgs(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = arg.startsWith('--') ? arg.slice(2).split('=')[0]! : undefined;
    if (name !== undefined && NOT_CARRIED[name]) throw new RunbookError('usage', `--${name} does not go with --via agent: ${NOT_CARRIED[name]}`);
    if (name === undefined || !CALLER_ONLY.has(name)) out.push(arg);
    else if (!arg.includes('=')) i++; // its value
  }
  return out;
}

/** The agent's check of a request it reads: a known command, for its own node, with no flag that reaches elsewhere. */
export function validateRequest(request: unknown, node: string): AgentRequest {
  const r = request as Partial<AgentRequest> | undefined;
  if (!r || typeof r.id !== 'string' || !/^[a-z0-9-]{1,40}$/.test(r.id)) throw new RunbookError('usage', 'the request has no valid id');
  if (!AGENT_COMMANDS.includes(r.command as AgentCommand)) throw new RunbookError('usage', `the agent runs ${AGENT_COMMANDS.join(' and ')} only, not ${JSON.stringify(r.command)}`);
  if (!Array.isArray(r.args) || !r.args.every((a) => typeof a === 'string')) throw new RunbookError('usage', 'the request\'s args are not a list of strings');
  if (r.args[0] !== node) throw new RunbookError('usage', `the request names node ${JSON.stringify(r.args[0])}, and this agent runs on ${node}`);
  const again = requestArgs(r.args);
  if (again.length !== r.args.length) throw new RunbookError('usage', 'the request carries flags that only a caller may give (how to reach the cluster or the node)');
  return { id: r.id, command: r.command as AgentCommand, args: r.args, by: String(r.by ?? 'unknown'), at: String(r.at ?? '') };
}

const json = <T>(text: string | undefined): T | undefined => {
  if (text === undefined || text === '') return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
};

export function readExchange(data: Record<string, string> | undefined): AgentExchange {
  const d = data ?? {};
  const exit = d.exit === undefined || d.exit === '' ? undefined : Number(d.exit);
  return {
    request: json<AgentRequest>(d.request),
    stop: d.stop || undefined,
    stopSent: d.stopSent === 'true',
    unit: json<AgentUnit>(d.unit),
    output: d.output ?? '',
    outputFrom: Number(d.outputFrom ?? 0) || 0,
    read: Number(d.read ?? 0) || undefined,
    exit: Number.isInteger(exit) ? exit : undefined,
    report: d.report,
    delivered: d.delivered === 'true',
  };
}

export function writeExchange(x: AgentExchange): Record<string, string> {
  const data: Record<string, string> = { output: x.output, outputFrom: String(x.outputFrom) };
  if (x.request) data.request = JSON.stringify(x.request);
  if (x.read) data.read = String(x.read);
  if (x.stop) data.stop = x.stop;
  if (x.stopSent) data.stopSent = 'true';
  if (x.unit) data.unit = JSON.stringify(x.unit);
  if (x.exit !== undefined) data.exit = String(x.exit);
  if (x.report !== undefined) data.report = x.report;
  if (x.delivered) data.delivered = 'true';
  return data;
}

/** The output with `more` appended, its head dropped past OUTPUT_KEPT. */
export function appendOutput(x: AgentExchange, more: string): Pick<AgentExchange, 'output' | 'outputFrom'> {
  const all = x.output + more;
  const drop = Math.max(0, Buffer.byteLength(all) - OUTPUT_KEPT);
  if (drop === 0) return { output: all, outputFrom: x.outputFrom };
  const kept = Buffer.from(all).subarray(drop).toString();
  return { output: kept, outputFrom: x.outputFrom + Buffer.byteLength(all) - Buffer.byteLength(kept) };
}
