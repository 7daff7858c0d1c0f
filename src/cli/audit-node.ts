import type { Cluster } from '../cluster/api.js';
import { auditLiveNode } from '../leaks/index.js';
import { reclaimNode } from '../leaks/reclaim/index.js';
import { DEFAULT_RUN_OPTIONS, validateLeaseNamespace } from '../runbook/options.js';
import type { Transport } from '../node/transport/index.js';
import { RunbookError } from '../errors.js';
import { auditMetrics } from '../metrics/audit.js';
import { AUDIT_TEXTFILE, validateTextfileDir, writeTextfile } from '../metrics/textfile.js';
import { CONNECT_OPTIONS } from './connect.js';
import { parseDuration } from './duration.js';
import { connectNode } from './node-access.js';
import { auditExitCode, renderAudit } from './render-audit.js';
import { runCommand, singleNode } from './command.js';
import { processIo, type CliIo } from './io.js';
import { refuseNotCarried, runViaAgent, VIA_OPTION, viaAgent } from './via-agent.js';
import { stopOnSignals } from './signals.js';

export const AUDIT_HELP = `Usage: zx runbooks/audit-node.mjs NODE [--reclaim] [--cluster-wide] [--output text|json|prometheus] [--textfile-dir DIR] [options]

Audits a node, on any day, for leaked network and sandbox resources: host-local IPs whose container is not a live
sandbox (both file formats) and pod IPs with no allocation, with usage per range of each network's own host-local
config (IPv4 and IPv6; kubenet's from the PodCIDRs); CNI cache entries with no live sandbox; dockershim/cri-dockerd
checkpoints with no container and sandboxes with no checkpoint; not-ready sandboxes kept by Created/Exited containers
(and a warning well before the ~1,400-sandbox CRI list limit); pods stuck Terminating and the containers that hold
them; Calico IPAM (leaked IPs of this node's blocks; a pod's IP its block records as free or for another pod; an IP of
one node's block used on another that the block does not record for that pod; a recorded borrow is a conflict only
where this node's own route for it is its block's blackhole); whereabouts allocations (IPPools) of the node's ranges whose
pod, bound here, runs in another sandbox; orphaned network namespaces; two CNI networks over one PodCIDR.
The cluster's IPAM is read as far as the node needs (its blocks, its pods, the pods its blocks name; the IPPools of its
ranges), so an audit costs the same on a cluster of 100 or 100,000 pods. Cluster-wide findings (Calico affinities of
removed nodes and the IPs their blocks still hold, handles with no IP; whereabouts allocations of pods that no longer exist) need the whole IPAM and every
pod: read with --cluster-wide, shown in their own section (JSON: clusterFindings), never changing the exit code. A check that
cannot look (runtime or API did not answer) is reported as "could not verify", never as clean. The node's state comes
back in one round trip.

  --reclaim                 release what is proven dead: seen in two observations --interval apart, older than
                            --grace, liveness being the union of runtime sandboxes, CNI cache, pod IPs from the API
                            and live netns. CNI DEL is replayed from the cache where it can be; a host-local file is
                            deleted only under the plugin's own flock after a re-check; all removed files are backed
                            up under /var/lib/node-maint/backups; Calico objects change with resourceVersion
                            preconditions, whereabouts' pool entries by a JSON patch that tests them (each saved on
                            the node first); what no one node owns only with --cluster-wide. The plan is printed
                            before anything is done. Refuses to act at all when either audit could not verify
                            everything. Holds the node's Lease
                            throughout, as upgrade-node does: refused while a run holds it (exit 9).
  --cluster-wide            also read the cluster's whole Calico IPAM and every pod: affinities of removed nodes,
                            handles that hold no IP, whereabouts allocations of gone pods, a pod elsewhere using an
                            address this node's block records as free (with --reclaim: released too)
  --lease-namespace NS      where the node's Lease is (kube-system), as upgrade-node's
  --interval DURATION       between the two observations (5s)     --grace DURATION   minimum age (120s)
  --skip-wait-for-delete-timeout DURATION
                            as upgrade-node's: a pod deleted longer ago (a finalizer holds it) of which the runtime
                            holds nothing is not counted stuck Terminating, and is listed as left alone
  --output text|json|prometheus
                            prometheus: the audit as Prometheus gauges (exposition format): the verdict, findings
                            per class, per network and range the usable, allocated, in-use and leaked IPs, sandboxes
                            ready and not, pods stuck Terminating (README: Metrics)
  --textfile-dir DIR        also write those gauges on the node to DIR/node_maint_audit.prom, for node-exporter's
                            textfile collector (Debian: /var/lib/prometheus/node-exporter); after --reclaim, the
                            audit after it
  --kubeconfig PATH         --context NAME
  Node access: as upgrade-node (--ssh-host, --ssh-port, --ssh-user, --ssh-key, --known-hosts, --ssh-bastion,
  --transport ssh|docker-exec|local, --container, --docker-host, --via ssh|agent; --reclaim over SSH only).

Exit codes: 0 clean (after --reclaim: nothing left); 13 findings of this node (left); 15 could not verify (a check
could not look, e.g. the runtime or the pod list did not answer; after --reclaim: nothing was done, or the audit after
it could not verify); 9 the node's Lease is held by a run (--reclaim, nothing done); 10 the kubeconfig's user lacks
a permission --reclaim needs (asked first, nothing done; runbooks/rbac.yaml: node-maint-reclaim); 2 usage; 3 node not found;
5 unreachable; 6 host key; 7 SSH authentication; 1 internal.`;

/** What the command asked of the Kubernetes API (JSON output): its requests and the bytes of their answers. */
const apiCost = (cluster: Cluster) => ({ requests: cluster.requestsSent, bytesRead: cluster.bytesRead });

export async function auditNodeMain(argv: string[], io: CliIo = processIo): Promise<number> {
  let transport: Transport | undefined;
  const options = { reclaim: { type: 'boolean' }, 'cluster-wide': { type: 'boolean' }, interval: { type: 'string' }, grace: { type: 'string' }, 'skip-wait-for-delete-timeout': { type: 'string' }, 'lease-namespace': { type: 'string' }, 'textfile-dir': { type: 'string' }, ...CONNECT_OPTIONS, ...VIA_OPTION } as const;
  try {
    return await runCommand(argv, io, { options, help: AUDIT_HELP, outputs: ['text', 'json', 'prometheus'] }, async (flags, positionals, json, format) => {
      const node = singleNode(positionals);
      const textfileDir = flags['textfile-dir'] === undefined ? undefined : validateTextfileDir(String(flags['textfile-dir']));
      if (format === 'prometheus' && flags.reclaim) throw new RunbookError('usage', '--output prometheus shows an audit; with --reclaim use --textfile-dir for the audit after it');
      const interval = flags.interval ? parseDuration(String(flags.interval), '--interval') : 5;
      const grace = flags.grace ? parseDuration(String(flags.grace), '--grace') : 120;
      const leaseNamespace = validateLeaseNamespace(String(flags['lease-namespace'] ?? DEFAULT_RUN_OPTIONS.leaseNamespace));
      if (viaAgent(flags.via)) {
        if (flags.reclaim) throw new RunbookError('usage', '--reclaim does not go with --via agent: no request reaches a release of IPAM records (the agent\'s runs may not make one); reclaim over SSH');
        if (format === 'prometheus') throw new RunbookError('usage', '--output prometheus does not go with --via agent: the agent\'s runs write the audit\'s gauges in /var/lib/node-maint/agent/metrics');
        refuseNotCarried(flags);
        const skipWait = flags['skip-wait-for-delete-timeout'] ? parseDuration(String(flags['skip-wait-for-delete-timeout']), '--skip-wait-for-delete-timeout') : 0;
        const audit = { ...(flags['cluster-wide'] ? { clusterWide: true } : {}), ...(skipWait ? { skipWaitForDeleteTimeoutSeconds: skipWait } : {}) };
        const stopping = stopOnSignals((line) => io.stderr(`${line}\n`));
        try {
          return await runViaAgent({ spec: { nodeName: node, command: 'audit', output: json ? 'json' : 'text', audit }, kubeconfig: flags.kubeconfig, context: flags.context, stop: stopping.signal, io });
        } finally {
          stopping.dispose();
        }
      }
      const access = await connectNode(node, flags, (line) => io.stderr(`node-maint: ${line}\n`));
      transport = access.transport;
      const started = Date.now();
      const ipamScope = flags['cluster-wide'] ? 'cluster' : 'node';
      if (!flags.reclaim) {
        const skipWait = flags['skip-wait-for-delete-timeout'] ? parseDuration(String(flags['skip-wait-for-delete-timeout']), '--skip-wait-for-delete-timeout') : 0;
        const { report } = await auditLiveNode({ cluster: access.cluster, transport, node, skipWaitForDeleteTimeoutSeconds: skipWait, ipamScope });
        if (textfileDir) await writeTextfile(transport, textfileDir, AUDIT_TEXTFILE, await auditMetrics(report));
        if (format === 'prometheus') io.stdout(await auditMetrics(report));
        else io.stdout(json ? `${JSON.stringify({ ...report, durationMs: Date.now() - started, api: apiCost(access.cluster) }, null, 2)}\n` : `${renderAudit(report)}\n`);
        return auditExitCode(report.verdict);
      }
      const result = await reclaimNode({
        cluster: access.cluster,
        transport,
        node,
        leaseNamespace,
        intervalSeconds: interval,
        graceSeconds: grace,
        ipamScope,
        onPlan: (lines) => io.stderr(`reclaim plan for ${node}:\n${lines.map((l) => `  - ${l}`).join('\n') || '  nothing is provably dead'}\n`),
      });
      if (textfileDir) await writeTextfile(transport, textfileDir, AUDIT_TEXTFILE, await auditMetrics(result.after));
      if (json) {
        io.stdout(`${JSON.stringify({ ...result, durationMs: Date.now() - started, api: apiCost(access.cluster) }, null, 2)}\n`);
      } else {
        const done = [...result.outcomes.map((o) => `  ${o.verdict.padEnd(12)} ${o.target}${o.detail ? ` (${o.detail})` : ''}`), ...[...result.calico, ...result.whereabouts].map((o) => `  ${o.verdict.padEnd(12)} ${o.detail}`)];
        const refused = result.plan.refused.length > 0 ? `Reclaim on ${node} refused, nothing was done: the audit could not verify everything:\n${result.plan.refused.map((r) => `  - ${r}`).join('\n')}\n` : '';
        io.stdout(`${refused || `Reclaim on ${node}: ${done.length} item(s) handled, backups in ${result.backupDir}\n${done.join('\n')}\n`}\nAfter:\n${renderAudit(result.after)}\n`);
      }
      return result.plan.refused.length > 0 ? auditExitCode('unverifiable') : auditExitCode(result.after.verdict);
    });
  } finally {
    await transport?.close();
  }
}
