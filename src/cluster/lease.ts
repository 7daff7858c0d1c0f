import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { isNotFound, type Cluster } from './api.js';
import type { Lease } from './types.js';

// A per-node Lease (coordination.k8s.io/v1): no two runs act on one node. It also carries the run's journal, so a
// killed run can be resumed from any machine that can reach the API.
export const LEASE_PREFIX = 'node-maint-';
export const JOURNAL_ANNOTATION = 'node-maint.io/journal';

export interface LeaseTiming {
  /** How long a holder's record must stay unchanged, as we observe it, before the Lease counts as abandoned. */
  durationSeconds: number;
  /** A holder that has not renewed for this long stops changing the node until it has renewed again. */
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
}

// client-go's leader election defaults.
export const DEFAULT_LEASE_TIMING: LeaseTiming = { durationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 };

export const leaseName = (node: string) => `${LEASE_PREFIX}${node}`;
export const leasePath = (ns: string, name?: string) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases${name ? `/${name}` : ''}`;

/** The Lease, or undefined; asked once, with a short timeout: the caller keeps the time. */
export async function readLease(cluster: Cluster, namespace: string, node: string, timeoutMs?: number): Promise<Lease | undefined> {
  try {
    return await cluster.get<Lease>(leasePath(namespace, leaseName(node)), { retry: false, timeoutMs });
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

export const microTime = (d = new Date()) => d.toISOString().replace('Z', '000Z');

/**
 * This machine: its hostname, for people, and its machine id (systemd's /etc/machine-id), since two CI runners may
 * share a hostname and must never take each other's processes for their own. "unknown" when there is none.
 */
export function machineIdentity(): string {
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = readFileSync(file, 'utf8').trim();
      if (/^[0-9a-f]{32}$/.test(id)) return `${hostname()}@${id.slice(0, 12)}`;
    } catch {
      // not there: the next one
    }
  }
  return `${hostname()}@unknown`;
}

/**
 * This process's PID namespace (the inode of /proc/self/ns/pid): two containers that share the host's network and a
 * bind-mounted machine id are still told apart by it, and a PID means something only inside its own namespace.
 */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Who we are: machine, PID namespace and process, with the process's start time so a reused PID is never taken for us:
 * `node-maint/HOST@MACHINEID/PID/START@PIDNS`.
 */
export function holderIdentity(pid = process.pid): string {
  return `node-maint/${machineIdentity()}/${pid}/${processStartTicks(pid) ?? 'unknown'}@${pidNamespace()}`;
}

/**
 * A holder string of a process this one can see: of this machine and of this PID namespace, with its pid and start
 * time; else undefined (another machine, another PID namespace, or an older holder string that names none: cannot tell).
 */
function localHolder(holder: string): { pid: number; ticks: string } | undefined {
  const m = /^node-maint\/([^/]+)\/(\d+)\/([^@\s]+)@(\d+)$/.exec(holder);
  const machine = machineIdentity();
  if (!m || m[1] !== machine || machine.endsWith('@unknown') || m[3] === 'unknown' || m[4] !== pidNamespace()) return undefined;
  return { pid: Number(m[2]), ticks: m[3]! };
}

function processStartTicks(pid: number): string | undefined {
  try {
    // Field 22 of /proc/PID/stat, counted after the parenthesised command name (which may hold spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Whether the holder is a run of this machine whose process is gone (killed): its Lease may be taken over at once
 * instead of being waited out. false when it cannot be told.
 */
export function isDeadLocalHolder(holder: string): boolean {
  const local = localHolder(holder);
  if (!local) return false;
  const pid = local.pid;
  if (pid === process.pid) return false;
  const ticks = processStartTicks(pid);
  if (ticks === undefined) {
    try {
      process.kill(pid, 0);
      return false;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }
  return ticks !== local.ticks;
}

/** What identifies one state of the holder's record: any renewal changes it. */
export const leaseRecord = (lease: Lease | undefined) => (lease ? `${lease.spec.holderIdentity ?? ''}|${lease.spec.renewTime ?? ''}|${lease.metadata.resourceVersion ?? ''}` : 'none');

export type HolderVerdict = 'free' | 'ours' | 'held' | 'alive' | 'abandoned' | 'fenced';

/**
 * client-go's rule, by our own clock only: a Lease held by someone else is abandoned when its record has not changed
 * for its holder's lease duration since we first saw it in that state ('fenced' when that is longer than ours). The holder's renewTime is never compared with our clock,
 * so a holder whose clock runs ahead is not taken over while it still renews.
 */
export function judgeHolder(
  lease: Lease | undefined,
  me: string,
  firstSeen: { record: string; atMs: number } | undefined,
  nowMs: number,
  durationSeconds: number,
): HolderVerdict {
  const holder = lease?.spec.holderIdentity;
  if (!lease || !holder) return 'free';
  if (holder === me) return 'ours';
  // A run of ours whose process is gone has abandoned it; one whose process lives is judged by its record as any other
  // holder: a stuck process (a provider orphaned by its `pulumi`) is taken over, and fenced out at its next renewal.
  if (isDeadLocalHolder(holder)) return 'abandoned';
  // The holder's own duration counts, as in client-go; one longer than a run waits (an operator fencing the node by
  // hand) is not waited out.
  const declared = lease.spec.leaseDurationSeconds ?? durationSeconds;
  if (declared > durationSeconds) return 'fenced';
  if (!firstSeen || firstSeen.record !== leaseRecord(lease)) return firstSeen ? 'alive' : 'held';
  return nowMs - firstSeen.atMs >= declared * 1000 ? 'abandoned' : 'held';
}

export function takenSpec(existing: Lease | undefined, me: string, durationSeconds: number): Lease['spec'] {
  const now = microTime();
  const changedHands = existing?.spec.holderIdentity !== me;
  return {
    holderIdentity: me,
    leaseDurationSeconds: durationSeconds,
    acquireTime: changedHands ? now : (existing?.spec.acquireTime ?? now),
    renewTime: now,
    leaseTransitions: (existing?.spec.leaseTransitions ?? 0) + (existing && changedHands && existing.spec.holderIdentity ? 1 : 0),
  };
}
