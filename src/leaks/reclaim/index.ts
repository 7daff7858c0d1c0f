import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from '../../cluster/api.js';
import { DEFAULT_LEASE_TIMING, holderIdentity } from '../../cluster/lease.js';
import { FencedTransport } from '../../node/transport/fenced.js';
import { LeaseKeeper } from '../../runbook/lease-keeper.js';
import { detectNetwork } from '../../node/cni/network-mode.js';
import { detectFlavor } from '../../node/runtime/flavor.js';
import { run } from '../../node/transport/types.js';
import type { Transport } from '../../node/transport/types.js';
import { releaseCalico } from '../calico/release.js';
import { releaseWhereabouts } from '../whereabouts/release.js';
import { hasWhereabouts } from '../whereabouts/read.js';
import { hasCalico } from '../calico/index.js';
import { calicoAges } from '../calico/ages.js';
import { whereaboutsAges } from '../whereabouts/ages.js';
import { reclaimPermissions, requirePermissions } from '../../cluster/permissions.js';
import { quote } from '../../node/transport/quote.js';
import { auditLiveNode } from '../index.js';
import type { AuditReport, IpamScope, ReleaseOutcome } from '../types.js';
import { planLines, planReclaim, refusingLines, type ReclaimPlan } from './plan.js';
import { parseReclaimOutput, reclaimScript, type ReclaimOutcome } from './script.js';

export interface ReclaimOptions {
  cluster: Cluster;
  transport: Transport;
  node: string;
  /** Where the node's Lease lives: reclaim holds it from the first audit to the last, as a run does. */
  leaseNamespace: string;
  /** Between the two observations a finding must survive. */
  intervalSeconds: number;
  /** Files younger than this are left alone: an ADD may still be under way. */
  graceSeconds: number;
  /** 'cluster' also judges, and releases, what no one node owns (audit-node --cluster-wide). */
  ipamScope?: IpamScope;
  onPlan?: (lines: string[]) => void;
}

export interface ReclaimResult {
  before: AuditReport;
  plan: ReclaimPlan;
  outcomes: ReclaimOutcome[];
  calico: ReleaseOutcome[];
  whereabouts: ReleaseOutcome[];
  after: AuditReport;
  backupDir: string;
}


/**
 * Audit twice, release what both observations call dead (printing the plan first), audit again; nothing when either
 * audit was blind. All of it under the node's Lease, as a run: no upgrade starts on the node meanwhile, and none is
 * under way (a live holder: exit 9, nothing done); every change fenced by it.
 */
export async function reclaimNode(options: ReclaimOptions): Promise<ReclaimResult> {
  // Asked before the first change, as a run does: a 403 half way would leave a pool entry patched, its reservation not.
  const [calico, whereabouts] = await Promise.all([hasCalico(options.cluster), hasWhereabouts(options.cluster)]);
  await requirePermissions(options.cluster, reclaimPermissions(options.leaseNamespace, calico, whereabouts, options.ipamScope), `the kubeconfig's user ${options.cluster.user}`, 'reclaim');
  const keeper = new LeaseKeeper(options.cluster, {
    ...DEFAULT_LEASE_TIMING,
    namespace: options.leaseNamespace,
    node: options.node,
    holder: holderIdentity(),
    outageToleranceSeconds: 120,
  });
  await keeper.acquire();
  const fence = () => keeper.fence();
  try {
    return await reclaimHeld({ ...options, cluster: options.cluster.withHooks({ beforeWrite: fence }), transport: new FencedTransport(options.transport, fence) });
  } finally {
    if (!keeper.isLost) await keeper.release().catch(() => undefined);
  }
}

async function reclaimHeld(options: ReclaimOptions): Promise<ReclaimResult> {
  const { cluster, transport, node, ipamScope } = options;
  const first = await auditLiveNode({ cluster, transport, node, ipamScope });
  await sleep(options.intervalSeconds * 1000);
  const second = await auditLiveNode({ cluster, transport, node, ipamScope });
  const everything = (r: AuditReport) => [...r.findings, ...r.clusterFindings];
  const wb = await whereaboutsAges(cluster, everything(second.report));
  const apiAges = new Map([...(await calicoAges(cluster, everything(second.report))), ...wb.ages]);
  const plan = planReclaim({
    first: everything(first.report),
    second: everything(second.report),
    unverifiable: refusingLines([first.report, second.report]),
    state: second.state,
    podCidr: second.podCidr,
    graceSeconds: options.graceSeconds,
    apiAges,
    ageBasis: wb.basis,
  });
  options.onPlan?.(planLines(plan));
  const flavor = detectFlavor(second.state);
  const backupDir = `/var/lib/node-maint/backups/reclaim-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  let outcomes: ReclaimOutcome[] = [];
  if (plan.replays.length + plan.reservations.length + plan.checkpoints.length + plan.netns.length + plan.containers.length > 0) {
    const script = reclaimScript(plan, { flavor, binDir: detectNetwork(second.state, flavor).binDir, backupDir, ipamRoots: second.state.ipamRoots });
    outcomes = parseReclaimOutput(await run(transport, script, { timeoutMs: 600_000 }));
  }
  const calico = plan.calico.length > 0 ? await releaseCalico(cluster, plan.calico) : [];
  // Each whereabouts record is saved on the node, beside the other backups, before it is removed from the API.
  const save = async (name: string, record: unknown) => {
    await run(transport, `mkdir -p ${quote(backupDir)} && printf '%s\n' ${quote(JSON.stringify(record))} > ${quote(`${backupDir}/${name}`)}`);
  };
  const whereabouts = plan.whereabouts.length > 0 ? await releaseWhereabouts(cluster, plan.whereabouts, save) : [];
  const after = await auditLiveNode({ cluster, transport, node, ipamScope });
  return { before: second.report, plan, outcomes, calico, whereabouts, after: after.report, backupDir };
}
