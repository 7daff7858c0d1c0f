import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// Where the bed's own CPU goes while the suite runs (issue 45): each node container's cgroup (its systemd, kubelet and
// runtime, and what a runbook ran in it over SSH), and each daemon the bed started (its pid file under the bed's run
// directory: the control plane, the bed's dockerd and containerd, Prometheus, the SSH relays).

/** CPU seconds so far, by container name and by daemon name. */
export interface BedCpu {
  nodes: Record<string, number>;
  daemons: Record<string, number>;
}

const PIDS = '/run/node-maint-testbed/pids';
const TICKS_PER_SECOND = 100;

const readOr = (path: string, otherwise = '') => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return otherwise;
  }
};

/** A container's CPU seconds from its cgroup: cgroup v1's cpuacct (ns) or v2's cpu.stat (usage_usec). */
function containerSeconds(id: string): number | undefined {
  const v1 = readOr(`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`);
  if (v1) return Number(v1) / 1e9;
  const v2 = /usage_usec (\d+)/.exec(readOr(`/sys/fs/cgroup/docker/${id}/cpu.stat`))?.[1];
  return v2 === undefined ? undefined : Number(v2) / 1e6;
}

/** A process's CPU and its waited-for children's, if it is still the process the pid file names (its start time). */
function daemonSeconds(pidFile: string): number | undefined {
  const [pid, started] = readOr(pidFile).trim().split(' ');
  const stat = readOr(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  if (!stat || (started && f[19] !== started)) return undefined;
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TICKS_PER_SECOND;
}

export function bedCpu(dockerHost: string): BedCpu {
  const nodes: Record<string, number> = {};
  let listed = '';
  try {
    listed = execFileSync('docker', ['-H', dockerHost, 'ps', '--no-trunc', '--format', '{{.ID}} {{.Names}}'], { encoding: 'utf8' });
  } catch {
    // A table of the suite's CPU, not a check: without the bed's dockerd it has no node lines, and the suite goes on.
  }
  for (const [id, name] of listed.trim().split('\n').filter(Boolean).map((l) => l.split(' '))) {
    const s = containerSeconds(id!);
    if (s !== undefined) nodes[`${name} ${id!.slice(0, 12)}`] = s;
  }
  const daemons: Record<string, number> = {};
  for (const f of existsSync(PIDS) ? readdirSync(PIDS).filter((f) => f.endsWith('.pid')) : []) {
    const s = daemonSeconds(join(PIDS, f));
    if (s !== undefined) daemons[f.replace(/\.pid$/, '')] = s;
  }
  return { nodes, daemons };
}

/**
 * What each spent between two readings; a container or daemon new since the first counts from zero, and so does one
 * whose counter went back (a node rebooted: its container started again, with a new cgroup).
 */
export function bedCpuSpent(before: BedCpu, after: BedCpu): BedCpu {
  const spent = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v < (a[k] ?? 0) ? v : v - (a[k] ?? 0)]));
  return { nodes: spent(before.nodes, after.nodes), daemons: spent(before.daemons, after.daemons) };
}

/** The lines the suite's CPU table ends with: the pool's nodes, the kind cluster's, and the bed's daemons. */
export function bedCpuLines(spent: BedCpu): string[] {
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  // Largest first; those under half a second (the SSH relays, mostly) only counted.
  const byName = (r: Record<string, number>) => {
    const shown = Object.entries(r).filter(([, v]) => v >= 0.5).sort((a, b) => b[1] - a[1]);
    const rest = Object.keys(r).length - shown.length;
    return [...shown.map(([k, v]) => `${k.split(' ')[0]} ${v.toFixed(0)}`), ...(rest ? [`${rest} more under 1`] : [])].join(', ');
  };
  const daemonsLine = `  the bed's daemons: ${sum(spent.daemons).toFixed(0)} s (${byName(spent.daemons)})`;
  const kind = Object.fromEntries(Object.entries(spent.nodes).filter(([k]) => k.startsWith('nm-kind')));
  const pool = Object.fromEntries(Object.entries(spent.nodes).filter(([k]) => !k.startsWith('nm-kind')));
  // No container read at all: the bed's dockerd did not answer, which is not "no CPU".
  if (Object.keys(spent.nodes).length === 0) return [`  the nodes: not read (the bed's dockerd did not answer)`, daemonsLine];
  return [
    `  the pool's nodes: ${sum(pool).toFixed(0)} s (${byName(pool)})`,
    `  the kind cluster's nodes: ${sum(kind).toFixed(0)} s`,
    daemonsLine,
  ];
}
