import { planReplay, type DelReplay } from '../../node/cni/replay.js';
import type { NodeState } from '../../node/state/types.js';
import type { AuditReport, Finding } from '../types.js';

// What reclaim may release: only findings seen in two observations some seconds apart, older than the grace period
// (an ADD may still be running), never an IP whose container the runtime knows. DEL replays first (the plugin
// cleans up after itself and locks on its own); files are deleted only where no replay is possible. Nothing at all
// when either audit was blind somewhere: liveness is a superset only when every source answered.
export interface ReclaimPlan {
  replays: DelReplay[];
  /** Reservations to delete under host-local's lock, if the file still names this container then. */
  reservations: Array<{ path: string; dir: string; containerId: string; ip: string }>;
  checkpoints: Array<{ path: string; sandboxId: string }>;
  netns: string[];
  /** Created or exited containers that keep a pod stuck Terminating. */
  containers: Array<{ id: string; pod: string }>;
  calico: Finding[];
  /** Leaked whereabouts allocations, released through the API. */
  whereabouts: Finding[];
  /** Findings left alone, with why. */
  skipped: Array<{ finding: Finding; reason: string }>;
  /** Why reclaim refuses to act at all: what the audits could not verify. Empty when it may act. */
  refused: string[];
}

export const findingKey = (f: Finding) =>
  `${f.class}|${f.evidence.file ?? ''}|${f.evidence.containerId ?? ''}|${f.evidence.ip ?? ''}|${f.evidence.pod ?? ''}|${String(f.evidence.affinity ?? f.evidence.handle ?? '')}`;

/** What refuses a reclaim in its audits: all they could not verify, but a sandbox in setup (its records are no finding). */
export const refusingLines = (reports: AuditReport[]): string[] =>
  reports.flatMap((r) => r.unverifiable.filter((u) => !r.inSetup?.includes(u)));

export function planReclaim(input: {
  /** Both observations' findings, the node's and the cluster-wide ones. */
  first: Finding[];
  second: Finding[];
  /** What either observation could not verify. */
  unverifiable: string[];
  state: NodeState;
  podCidr?: string;
  graceSeconds: number;
  /** Calico's and whereabouts' records by their objects' age (findingKey to seconds), where the API gave one. */
  apiAges?: Map<string, number>;
  /** What an age of apiAges is measured by, where it is not the record's own object. */
  ageBasis?: Map<string, string>;
}): ReclaimPlan {
  const { state } = input;
  const seenBefore = new Set(input.first.map(findingKey));
  const refused = [...new Set(input.unverifiable)];
  const plan: ReclaimPlan = { replays: [], reservations: [], checkpoints: [], netns: [], containers: [], calico: [], whereabouts: [], skipped: [], refused };
  if (refused.length > 0) {
    plan.skipped = input.second.map((finding) => ({ finding, reason: `not reclaimed: the audit could not verify everything (${refused.join('; ')})` }));
    return plan;
  }
  // Held back while younger than the grace, measured from the thing's own age; the reason says when that ends.
  const heldBack = (finding: Finding, ageSeconds: number): boolean => {
    if (ageSeconds >= input.graceSeconds) return false;
    const age = Math.max(0, Math.floor(ageSeconds));
    const basis = input.ageBasis?.get(findingKey(finding));
    plan.skipped.push({ finding, reason: `younger than --grace ${input.graceSeconds}s (${age}s old${basis ? `, by ${basis}` : ''}): releasable in ${input.graceSeconds - age}s` });
    return true;
  };
  const replayed = new Set<string>();
  const fallback = { podCidr: input.podCidr, configsByNetwork: new Map<string, string>() };
  const sandboxPids = new Map(state.sandboxes.map((s) => [s.id, s.pid]));

  for (const f of input.second) {
    if (!seenBefore.has(findingKey(f))) {
      plan.skipped.push({ finding: f, reason: 'seen once only' });
      continue;
    }
    switch (f.class) {
      case 'cni-cache-orphan': {
        const entry = state.cniCache.find((e) => e.path === f.evidence.file);
        if (!entry || heldBack(f, state.now - entry.mtime)) break;
        const pid = sandboxPids.get(entry.containerId) ?? 0;
        const replay = planReplay(entry, pid > 0 ? `/proc/${pid}/ns/net` : (entry.netns ?? ''), fallback);
        if ('calls' in replay) {
          plan.replays.push(replay);
          replayed.add(`${entry.containerId}|${entry.ifName}`);
        } else plan.skipped.push({ finding: f, reason: replay.reason });
        break;
      }
      case 'ip-reservation-leaked': {
        const r = state.ipam.flatMap((d) => d.reservations).find((x) => x.path === f.evidence.file);
        if (r && !heldBack(f, state.now - r.mtime)) plan.reservations.push({ path: r.path, dir: r.path.slice(0, r.path.lastIndexOf('/')), containerId: r.containerId, ip: r.ip });
        break;
      }
      case 'checkpoint-orphan':
        plan.checkpoints.push({ path: String(f.evidence.file), sandboxId: String(f.evidence.containerId) });
        break;
      case 'netns-orphan': {
        const name = String(f.evidence.file).split('/').pop()!;
        if (!heldBack(f, state.netnsActivity[name]?.ageSeconds ?? 0)) plan.netns.push(name);
        break;
      }
      case 'stuck-terminating':
        for (const c of (f.evidence.containers as Array<{ id: string; state: string }>) ?? []) {
          if (c.state !== 'running') plan.containers.push({ id: c.id, pod: String(f.evidence.pod) });
        }
        break;
      case 'calico-ip-leaked':
      case 'calico-affinity-orphan':
      case 'calico-handle-leaked': {
        const age = input.apiAges?.get(findingKey(f));
        if (age === undefined || !heldBack(f, age)) plan.calico.push(f);
        break;
      }
      case 'whereabouts-ip-leaked': {
        const age = input.apiAges?.get(findingKey(f));
        if (age === undefined || !heldBack(f, age)) plan.whereabouts.push(f);
        break;
      }
      default:
        plan.skipped.push({ finding: f, reason: 'reported only: not provably dead' });
    }
  }
  // A reservation whose owner's cache entry is replayed is freed by that DEL; the file is then only re-checked.
  plan.reservations = plan.reservations.filter((r) => ![...replayed].some((k) => k.startsWith(`${r.containerId}|`)));
  return plan;
}

export function planLines(plan: ReclaimPlan): string[] {
  if (plan.refused.length > 0) return plan.refused.map((reason) => `refused, nothing will be done: ${reason}`);
  return [
    // The cached result's addresses, not "frees": the IPAM may have given them back already (a release through the API).
    ...plan.replays.map((r) => `replay CNI DEL ${r.networkName}/${r.ifName} of ${r.containerId.slice(0, 12)}${r.ips.length ? ` (its cached result names ${r.ips.join(', ')}; the plugin releases what it still holds)` : ''}`),
    ...plan.reservations.map((r) => `free ${r.ip}: delete ${r.path} under ${r.dir}/lock, if it still names ${r.containerId.slice(0, 12)} and no such container exists`),
    ...plan.checkpoints.map((c) => `delete checkpoint ${c.path} once its sandbox's network is released`),
    ...plan.netns.map((n) => `delete network namespace ${n} if no process is in it`),
    ...plan.containers.map((c) => `remove leftover container ${c.id.slice(0, 12)} of ${c.pod}`),
    ...plan.calico.map((f) => `Calico: release ${f.class.replace('calico-', '')}: ${f.message}`),
    ...plan.whereabouts.map((f) => `whereabouts: release ${f.message}`),
    ...plan.skipped.map(({ finding, reason }) => `left alone: ${finding.class}: ${finding.message} (${reason})`),
  ];
}
