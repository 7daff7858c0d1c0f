import type { AuditReport, AuditVerdict, LeakClass } from '../leaks/types.js';
import { Exposition } from './gauges.js';

// The leak audit as Prometheus gauges: what `audit-node --output prometheus` prints and the textfile the node's
// node-exporter serves. Every class and verdict is always present (0 when absent), so alerts see a finding go away.
const CLASSES: LeakClass[] = [
  'ip-reservation-leaked',
  'pod-ip-unallocated',
  'cni-cache-orphan',
  'checkpoint-orphan',
  'sandbox-without-checkpoint',
  'sandbox-accumulation',
  'stuck-terminating',
  'netns-orphan',
  'duplicate-network-dir',
  'calico-ip-leaked',
  'calico-handle-leaked',
  'calico-affinity-orphan',
  'calico-ip-conflict',
];
const VERDICTS: AuditVerdict[] = ['clean', 'leaks', 'unverifiable'];

export async function auditMetrics(report: AuditReport): Promise<string> {
  const m = new Exposition();
  const node = { node: report.node };
  const verdict = m.gauge('node_maint_audit_verdict', 'The leak audit verdict: 1 for the verdict it came to (unverifiable: a check could not look).', ['node', 'verdict']);
  for (const v of VERDICTS) verdict.set({ ...node, verdict: v }, report.verdict === v ? 1 : 0);
  m.gauge('node_maint_audit_unverifiable_checks', 'Checks of the leak audit that could not look (the runtime or the API did not answer).', ['node']).set(node, report.unverifiable.length);
  const findings = m.gauge('node_maint_audit_findings', "This node's leak audit findings by class.", ['node', 'class']);
  for (const c of CLASSES) findings.set({ ...node, class: c }, report.findings.filter((f) => f.class === c).length);
  const range = ['node', 'network', 'range'];
  const usable = m.gauge('node_maint_ip_range_usable', 'Addresses host-local may hand out in the range (a /25 has 125).', range);
  const allocated = m.gauge('node_maint_ip_range_allocated', 'host-local reservations in the range.', range);
  const inUse = m.gauge('node_maint_ip_range_in_use', 'Reservations of the range held by a live sandbox.', range);
  const leaked = m.gauge('node_maint_ip_leaked', 'Reservations of the range whose container is not a live sandbox: leaked IPs.', range);
  for (const r of report.ranges) {
    const labels = { ...node, network: r.network, range: r.cidr ?? 'unknown' };
    if (r.cidr !== null) usable.set(labels, r.usable);
    allocated.set(labels, r.allocated);
    inUse.set(labels, r.inUse);
    leaked.set(labels, r.leaked);
  }
  const c = report.counts;
  const sandboxes = m.gauge('node_maint_sandboxes', 'Pod sandboxes the runtime lists, ready or not.', ['node', 'state']);
  sandboxes.set({ ...node, state: 'ready' }, c.sandboxes - c.notReadySandboxes);
  sandboxes.set({ ...node, state: 'not_ready' }, c.notReadySandboxes);
  m.gauge('node_maint_pods_stuck_terminating', 'Pods bound to the node stuck Terminating, held by containers never removed.', ['node']).set(node, report.findings.filter((f) => f.class === 'stuck-terminating').length);
  m.gauge('node_maint_ip_reservations', 'host-local reservation files on the node.', ['node']).set(node, c.reservations);
  m.gauge('node_maint_cni_cache_entries', "libcni cache entries on the node.", ['node']).set(node, c.cacheEntries);
  m.gauge('node_maint_checkpoints', 'Sandbox checkpoints of cri-dockerd/dockershim on the node.', ['node']).set(node, c.checkpoints);
  m.gauge('node_maint_audit_timestamp_seconds', "When the node's state was read (the node's clock).", ['node']).set(node, report.takenAt);
  return m.text();
}
