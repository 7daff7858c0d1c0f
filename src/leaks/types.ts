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
  | 'calico-ip-conflict';

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

/** Per host-local range: a /25 has 125 usable pod addresses. */
export interface RangeUsage {
  network: string;
  cidr: string;
  usable: number;
  allocated: number;
  inUse: number;
  leaked: number;
}

export interface AuditReport {
  node: string;
  /** The node's clock when its state was read, seconds since the epoch. */
  takenAt: number;
  findings: Finding[];
  ranges: RangeUsage[];
  counts: { reservations: number; cacheEntries: number; checkpoints: number; sandboxes: number; notReadySandboxes: number; pods: number };
}

export interface AuditSummary {
  findings: number;
  reservations: number;
  cacheEntries: number;
  checkpoints: number;
  sandboxes: number;
  /** The first few findings as one-line messages. */
  top: string[];
}

export function summarize(report: AuditReport, limit = 10): AuditSummary {
  return {
    findings: report.findings.length,
    reservations: report.counts.reservations,
    cacheEntries: report.counts.cacheEntries,
    checkpoints: report.counts.checkpoints,
    sandboxes: report.counts.sandboxes,
    top: report.findings.slice(0, limit).map((f) => `${f.class}: ${f.message}`),
  };
}
