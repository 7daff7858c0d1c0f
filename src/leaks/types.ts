// What the leak audit finds: each finding with the evidence an operator needs to check it by hand.
export type LeakClass =
  | 'ip-reservation-leaked'
  | 'pod-ip-unallocated'
  | 'cni-cache-orphan'
  | 'checkpoint-orphan'
  | 'sandbox-without-checkpoint'
  | 'sandbox-accumulation'
  | 'stuck-terminating'
  | 'netns-orphan'
  | 'duplicate-network-dir'
  | 'calico-ip-leaked'
  | 'calico-handle-leaked'
  | 'calico-affinity-orphan'
  | 'calico-ip-conflict'
  | 'whereabouts-ip-leaked';

export interface Evidence {
  file?: string;
  containerId?: string;
  pod?: string;
  ip?: string;
  network?: string;
  [key: string]: unknown;
}

export interface Finding {
  class: LeakClass;
  /** leak: a resource nothing will ever free; warning: heading for trouble (counts near a limit). */
  severity: 'leak' | 'warning';
  message: string;
  evidence: Evidence;
}

/** What became of one finding a reclaim released through the API (Calico's or whereabouts' records). */
export interface ReleaseOutcome {
  finding: Finding;
  /** gone: released by someone else since the audit (a DEL the reclaim replayed from libcni's cache, say). */
  verdict: 'freed' | 'gone' | 'changed' | 'kept' | 'failed';
  detail: string;
}

/** Per host-local range of a network, from the network's own IPAM config: a kubenet /25 has 125 usable addresses. */
export interface MeasuredRange {
  network: string;
  /** The range's subnet. */
  cidr: string;
  /** The first and last address host-local hands out in it. */
  first: string;
  last: string;
  /** Where the range comes from: the config file, or "PodCIDR" (kubenet's config is generated, never on disk). */
  source: string;
  usable: number;
  /** Reservation files whose address lies in the range. */
  allocated: number;
  inUse: number;
  leaked: number;
}

/** Reservations of a network whose range is unknown (no config found), or that lie outside every configured range. */
export interface UnmeasuredRange {
  network: string;
  cidr: null;
  reason: string;
  allocated: number;
  inUse: number;
  leaked: number;
}

export type RangeUsage = MeasuredRange | UnmeasuredRange;

/** clean: every check ran and found nothing; leaks: a finding of this node is proven; unverifiable: nothing is
 * proven, but some check could not look (a blind check is never "clean"). */
export type AuditVerdict = 'clean' | 'leaks' | 'unverifiable';

/**
 * What an audit reads of the cluster's IPAM (Calico, whereabouts): the node's own (every proof of a run; bytes that do
 * not grow with the cluster's pods), or also the whole of it and every pod's name, for what no one node owns.
 */
export type IpamScope = 'node' | 'cluster';

export interface AuditReport {
  node: string;
  /** The node's clock when its state was read, seconds since the epoch. */
  takenAt: number;
  verdict: AuditVerdict;
  /** Why some check could not look, whatever the verdict; reclaim refuses to act while this is not empty. */
  unverifiable: string[];
  /** The lines of unverifiable about records of a sandbox in setup: not judged now, and not ones reclaim touches. */
  inSetup?: string[];
  /** This node's findings: only these count against it. */
  findings: Finding[];
  /** Findings no one node owns (Calico affinities of removed nodes, handles with no IP, whereabouts allocations of gone
   * pods): reported, never counted. */
  clusterFindings: Finding[];
  /** 'node': what no one node owns was not read (audit-node --cluster-wide reads it). */
  ipamScope: IpamScope;
  /** What this audit did not read, on a cluster where there is something to read (Calico's or whereabouts' IPAM). */
  notRead?: string;
  ranges: RangeUsage[];
  /** What the audit left alone: other CNI users' cache entries and host-local directories (podman), not Kubernetes'. */
  leftAlone: string[];
  counts: { reservations: number; cacheEntries: number; checkpoints: number; sandboxes: number; notReadySandboxes: number; pods: number };
}

export function auditVerdict(findings: Finding[], unverifiable: string[]): AuditVerdict {
  if (findings.length > 0) return 'leaks';
  return unverifiable.length > 0 ? 'unverifiable' : 'clean';
}

/** The network name the audit gives Calico's blocks, counted as ranges. */
export const CALICO_NETWORK = 'calico-ipam';

export interface AuditSummary {
  verdict: AuditVerdict;
  /** This node's findings. */
  findings: number;
  clusterFindings: number;
  unverifiable: string[];
  reservations: number;
  /** The node's addresses in its IPAM's own words: host-local's reservations, Calico's addresses in its blocks. */
  addresses: string;
  cacheEntries: number;
  checkpoints: number;
  sandboxes: number;
  /** The first few findings as one-line messages. */
  top: string[];
}

/** "3 IP reservation(s)", "5 Calico address(es) in 1 block(s)", or both where a node has both. */
export function addressWords(report: AuditReport): string {
  const blocks = report.ranges.filter((r) => r.network === CALICO_NETWORK);
  const calico = `${blocks.reduce((n, b) => n + b.allocated, 0)} Calico address(es) in ${blocks.length} block(s)`;
  const hostLocal = `${report.counts.reservations} IP reservation(s)`;
  if (blocks.length === 0) return hostLocal;
  return report.counts.reservations > 0 ? `${hostLocal}, ${calico}` : calico;
}

export function summarize(report: AuditReport, limit = 10): AuditSummary {
  return {
    verdict: report.verdict,
    findings: report.findings.length,
    clusterFindings: report.clusterFindings.length,
    unverifiable: report.unverifiable,
    reservations: report.counts.reservations,
    addresses: addressWords(report),
    cacheEntries: report.counts.cacheEntries,
    checkpoints: report.counts.checkpoints,
    sandboxes: report.counts.sandboxes,
    top: report.findings.slice(0, limit).map((f) => `${f.class}: ${f.message}`),
  };
}
