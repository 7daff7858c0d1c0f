import { ORIGIN_PATTERN } from '../node/packages/pending.js';
import type { Transport } from '../node/transport/index.js';
import { DEFAULT_RUN_OPTIONS, parseTargets, PROOF_LEVELS, type ProofLevel, type RunOptions } from '../runbook/options.js';
import { HOOK_FLAGS, type HookPoint } from '../runbook/hooks.js';
import { renderReport } from '../runbook/report.js';
import { runUpgrade } from '../runbook/runner.js';
import { CONNECT_OPTIONS } from './connect.js';
import { parseDuration, parseInteger } from './duration.js';
import { exitCodeLines, usageError } from '../errors.js';
import { runCommand, singleNode } from './command.js';
import { processIo, type CliIo } from './io.js';
import { stopOnSignals } from './signals.js';
import { connectNode } from './node-access.js';
import type { Cluster } from '../cluster/api.js';
import { readLease } from '../cluster/lease.js';
import { isUnfinished, journalOf, rebootInFlight } from '../runbook/journal.js';
import { parsePendingUpgrades, PENDING_UPGRADES_SCRIPT, pendingTargets } from '../node/packages/pending.js';
import { run } from '../node/transport/index.js';
import { progressPrinter } from '../runbook/progress.js';
import { publishRunMetrics, validateTextfileDir } from '../metrics/textfile.js';
import { refuseNotCarried, runViaAgent, VIA_HELP, VIA_OPTION, viaAgent } from './via-agent.js';
import { upgradeSpecOf } from '../agent/spec.js';

export const UPGRADE_HELP = `Usage: zx runbooks/upgrade-node.mjs NODE [--to PACKAGE=VERSION[,PACKAGE=VERSION]] [--reboot | --reboot-if-required] [options]

Upgrades a node's container runtime safely, under a per-node Lease: preflight (PodDisruptionBudgets, drain timeouts,
dpkg state and lock, CNI cache entries that could not be replayed: all checked before anything changes), cordon,
drain, stop kubelet, tear down every sandbox's network (CNI DEL replayed from libcni's cache, backed up first), clear
checkpoints and CNI IPAM and cache directories (backed up on the node first), upgrade the packages (held packages
stay held), start kubelet and wait for PodCIDR (not on calico-ipam), Ready and the runtime network, prove the node (a smoke pod pinned to
it gets a sandbox and an IP, then the leak audit is clean), uncordon (only if this run cordoned), verify again.
With --reboot (or --reboot-if-required) the node is rebooted after the clearing and any upgrade, and proven the same
way on its new boot before it takes pods again.

Every step is written to the journal on the Lease before it acts. A failure before uncordon rolls back what the run
did, newest first; uncordon is the point of no return: after it nothing is downgraded. A killed run is finished by
the same command (steps done are not done again), or rolled back with --rollback. Ctrl-C (SIGINT), SIGTERM or SIGHUP
stops the run at its next safe point within 30 s (exit 18): the Lease is released and the report says the node's
state; a second signal ends the process at once.

Target:
  --to PACKAGE=VERSION[,...]   exact versions, e.g. containerd=1.6.20~ds1-1+deb12u3,docker.io=20.10.24+dfsg1-1+deb12u1+b6
  --pending-upgrades           the upgrades apt has pending on the node (apt-get -s upgrade: held packages kept back,
                               nothing new installed or removed), as exact targets, kept for rollback like --to's;
                               none pending (and no reboot): nothing to do. An unfinished run goes on toward the ones
                               it planned
  --pending-origin ORIGIN      only those from an origin as apt-get -s prints it (Debian-Security, stable-security)
  --dry-run                    observe and plan every step, change nothing, print the plan
  --rollback                   roll back the node's unfinished run from its journal (refused past the point of no return)

Reboot (kured's job, with the drain, teardown and proof of an upgrade; --to becomes optional):
  --reboot                     reboot the node as a step of the run
  --reboot-if-required         reboot only when the node says so: /var/run/reboot-required (Debian's and Ubuntu's
                               packages write it), or --reboot-sentinel-command CMD exiting 0 on the node; without
                               it (and with nothing to upgrade) the run does nothing, and says so
  --reboot-command CMD         (systemctl reboot) what reboots the node
  --reboot-timeout DURATION    (600s) how long the node may take to answer on a new boot (its kernel boot_id or PID
                               1's start changed; SSH with the same host key); past it: exit 19, the node stays
                               cordoned, the same command finishes once it is back. A reboot cannot be rolled back:
                               a failure after it rolls back the runtime as without it, and says so

Cluster:
  --kubeconfig PATH            default: $KUBECONFIG or ~/.kube/config
  --context NAME               a context of the kubeconfig

Node access (default: ssh to the node's InternalIP):
${VIA_HELP}
  --ssh-host HOST              --ssh-port PORT (22)        --ssh-user USER (root; others use sudo -n)
  --ssh-key PATH               (~/.ssh/id_*)               --known-hosts PATH (~/.ssh/known_hosts; never bypassed)
  --ssh-bastion [USER@]HOST[:PORT]  jump host: its ~/.ssh/config entry, else the node's key and known_hosts
                               What these leave out comes from ~/.ssh/config's entry for --ssh-host or the node's name
                               (HostName, User, Port, IdentityFile, IdentitiesOnly, UserKnownHostsFile, one ProxyJump,
                               with Include, Host and Match blocks); ssh-agent's keys (SSH_AUTH_SOCK) are offered after
                               the key file's; a passphrase-protected key needs the agent
  --transport ssh|docker-exec|local
  --container NAME             for docker-exec (kind nodes are containers)   --docker-host URL

Drain (as kubectl drain):
  --ignore-daemonsets          --delete-emptydir-data      --force (pods without a controller)
  --grace-period SECONDS (-1: each pod's own)              --timeout DURATION (600s: evictions and waits)
  --skip-wait-for-delete-timeout DURATION  pods deleted longer ago than this (a finalizer holds them) are neither
                               waited for nor, when nothing of them is left in the runtime, counted stuck by the audit

Other:
  --output text|json           the final report (progress always goes to stderr)
  --textfile-dir DIR           after the run, write on the node DIR/node_maint_run.prom (result, exit code, step
                               durations) and DIR/node_maint_audit.prom (a fresh leak audit), for node-exporter's
                               textfile collector (Debian: /var/lib/prometheus/node-exporter); not on a dry run
  --allow-control-plane        maintain a control-plane node (refused otherwise)
  --allow-no-rollback          go on when the versions installed now are in neither the node's package sources nor
                               apt's cache (refused otherwise, exit 10): a failure then cannot reinstall them
  --lease-namespace NS         (kube-system) where the node's Lease and journal are
  --smoke-namespace NS         (the lease namespace) where the smoke pod runs (it meets Pod Security's restricted)
  --ready-timeout DURATION     (300s) for PodCIDR, Ready and the runtime network after kubelet starts
  --smoke-timeout DURATION     (120s) for the smoke pod to get a sandbox and an IP
  --proof ipam|network-only    (ipam) what the smoke pod must show before uncordon: its IP held by a live sandbox in
                               the node's IPAM (host-local or whereabouts; a node whose CNI uses another IPAM is
                               refused in preflight, exit 10), or only an IP and Ready (the IPAM not checked, said)
  --lock-timeout DURATION      (120s) for another process's apt/dpkg to release the dpkg lock
  --outage-tolerance DURATION  (120s) how long an API outage is waited out (changes to the node held meanwhile)
  --budget-wait DURATION       (120s) how long preflight waits for a budget that is at zero only for now (its pods
                               are being replaced); a budget that forbids all disruption stops the run at once
  -h, --help

Hooks (a shell command run on the node, or on this machine if it starts with "local:", with NODE_MAINT_NODE,
NODE_MAINT_RUN_ID, NODE_MAINT_FROM, NODE_MAINT_TO and NODE_MAINT_HOOK in its environment; up to 300s; a resumed run
runs again the hook of a step it runs again, so make hooks idempotent):
  --hook-before-drain CMD      fails: the run rolls back (uncordoned, nothing drained)
  --hook-after-upgrade CMD     after the runtime is upgraded and verified; fails: the run rolls back
  --hook-after-uncordon CMD    after the point of no return; fails: reported (exit 14), nothing downgraded

Exit codes:
${exitCodeLines().join('\n')}`;

const UPGRADE_OPTIONS = {
  ...VIA_OPTION,
  to: { type: 'string' },
  'dry-run': { type: 'boolean' },
  'ignore-daemonsets': { type: 'boolean' },
  'delete-emptydir-data': { type: 'boolean' },
  force: { type: 'boolean' },
  'grace-period': { type: 'string' },
  'skip-wait-for-delete-timeout': { type: 'string' },
  timeout: { type: 'string' },
  'lease-namespace': { type: 'string' },
  'smoke-namespace': { type: 'string' },
  'ready-timeout': { type: 'string' },
  'budget-wait': { type: 'string' },
  'smoke-timeout': { type: 'string' },
  proof: { type: 'string' },
  'lock-timeout': { type: 'string' },
  'outage-tolerance': { type: 'string' },
  'allow-control-plane': { type: 'boolean' },
  'allow-no-rollback': { type: 'boolean' },
  rollback: { type: 'boolean' },
  'hook-before-drain': { type: 'string' },
  'hook-after-upgrade': { type: 'string' },
  'hook-after-uncordon': { type: 'string' },
  'textfile-dir': { type: 'string' },
  reboot: { type: 'boolean' },
  'reboot-if-required': { type: 'boolean' },
  'reboot-sentinel-command': { type: 'string' },
  'reboot-command': { type: 'string' },
  'reboot-timeout': { type: 'string' },
  'pending-upgrades': { type: 'boolean' },
  'pending-origin': { type: 'string' },
  ...CONNECT_OPTIONS,
} as const;

function parseReboot(values: Record<string, unknown>): Pick<RunOptions, 'reboot' | 'rebootSentinelCommand' | 'rebootCommand' | 'rebootTimeoutSeconds'> {
  if (values.reboot && values['reboot-if-required']) throw usageError('--reboot and --reboot-if-required do not go together');
  if (values['reboot-sentinel-command'] !== undefined && !values['reboot-if-required']) throw usageError('--reboot-sentinel-command needs --reboot-if-required');
  const reboot = values.reboot ? 'always' : values['reboot-if-required'] ? 'if-required' : 'never';
  if (reboot === 'never' && (values['reboot-command'] !== undefined || values['reboot-timeout'] !== undefined)) throw usageError('--reboot-command and --reboot-timeout need --reboot or --reboot-if-required');
  return {
    reboot,
    rebootSentinelCommand: values['reboot-sentinel-command'] === undefined ? undefined : String(values['reboot-sentinel-command']),
    rebootCommand: values['reboot-command'] === undefined ? DEFAULT_RUN_OPTIONS.rebootCommand : String(values['reboot-command']),
    rebootTimeoutSeconds: values['reboot-timeout'] === undefined ? DEFAULT_RUN_OPTIONS.rebootTimeoutSeconds : parseDuration(String(values['reboot-timeout']), '--reboot-timeout'),
  };
}

/** --pending-upgrades [--pending-origin ORIGIN]: `{ origin }` (no origin: every pending upgrade); undefined without it. */
function parsePending(values: Record<string, unknown>): { origin?: string } | undefined {
  const origin = values['pending-origin'] === undefined ? undefined : String(values['pending-origin']);
  if (!values['pending-upgrades']) {
    if (origin !== undefined) throw usageError('--pending-origin needs --pending-upgrades');
    return undefined;
  }
  if (values.to !== undefined) throw usageError('--pending-upgrades and --to do not go together: the pending upgrades are the targets');
  if (origin !== undefined && !ORIGIN_PATTERN.test(origin)) throw usageError(`invalid --pending-origin ${JSON.stringify(origin)}: an origin as apt-get -s prints it, e.g. Debian-Security`);
  return { origin };
}

/**
 * The pending upgrades' targets: those an unfinished run planned (a resume or a rollback goes on toward them), else
 * what apt has pending on the node now.
 */
async function pendingUpgradeTargets(cluster: Cluster, transport: Transport, options: RunOptions, origin: string | undefined, say: (l: string) => void): Promise<Record<string, string>> {
  const journal = journalOf(await readLease(cluster, options.leaseNamespace, options.node));
  if (isUnfinished(journal)) {
    say(`node-maint: the unfinished run ${journal.runId} planned the pending upgrades ${Object.entries(journal.targets).map(([p, v]) => `${p}=${v}`).join(', ')}: it goes on toward them`);
    return journal.targets;
  }
  const pending = parsePendingUpgrades(await run(transport, PENDING_UPGRADES_SCRIPT));
  const targets = pendingTargets(pending, origin);
  say(`node-maint: ${Object.keys(targets).length} pending upgrade(s) on ${options.node}${origin ? ` from ${origin}` : ''} (apt-get -s upgrade; held packages kept back): ${Object.entries(targets).map(([p, v]) => `${p}=${v}`).join(', ') || 'none'}`);
  return targets;
}

function parseProof(value: unknown): ProofLevel {
  if (value === undefined) return DEFAULT_RUN_OPTIONS.proof;
  if (!(PROOF_LEVELS as readonly unknown[]).includes(value)) throw usageError(`--proof: want ${PROOF_LEVELS.join(' or ')}, got ${JSON.stringify(value)}`);
  return value as ProofLevel;
}

export async function upgradeNodeMain(argv: string[], io: CliIo = processIo): Promise<number> {
  let transport: Transport | undefined;
  const stopping = stopOnSignals((line) => io.stderr(`${line}\n`));
  try {
    return await runCommand(argv, io, { options: UPGRADE_OPTIONS, help: UPGRADE_HELP }, async (values, positionals, json) => {
      const seconds = (flag: string, fallback: number) => (values[flag] ? parseDuration(String(values[flag]), `--${flag}`) : fallback);
      const options: RunOptions = {
        ...DEFAULT_RUN_OPTIONS,
        node: singleNode(positionals),
        // --rollback needs none (the journal has them); a reboot alone neither (validateRunOptions says what is missing);
        // --pending-upgrades asks the node for them once it is reached.
        targets: values.to === undefined ? {} : parseTargets(String(values.to)),
        ...parseReboot(values),
        dryRun: values['dry-run'] === true,
        leaseNamespace: String(values['lease-namespace'] ?? DEFAULT_RUN_OPTIONS.leaseNamespace),
        ...(values['smoke-namespace'] === undefined ? {} : { smokeNamespace: String(values['smoke-namespace']) }),
        readyTimeoutSeconds: seconds('ready-timeout', DEFAULT_RUN_OPTIONS.readyTimeoutSeconds),
        budgetWaitSeconds: seconds('budget-wait', DEFAULT_RUN_OPTIONS.budgetWaitSeconds),
        smokeTimeoutSeconds: seconds('smoke-timeout', DEFAULT_RUN_OPTIONS.smokeTimeoutSeconds),
        proof: parseProof(values.proof),
        lockTimeoutSeconds: seconds('lock-timeout', DEFAULT_RUN_OPTIONS.lockTimeoutSeconds),
        outageToleranceSeconds: seconds('outage-tolerance', DEFAULT_RUN_OPTIONS.outageToleranceSeconds),
        allowControlPlane: values['allow-control-plane'] === true,
        allowNoRollback: values['allow-no-rollback'] === true,
        rollback: values.rollback === true,
        hooks: Object.fromEntries(
          (Object.entries(HOOK_FLAGS) as Array<[HookPoint, string]>).flatMap(([point, flag]) => (values[flag] === undefined ? [] : [[point, String(values[flag])]])),
        ),
        drain: {
          ignoreDaemonSets: values['ignore-daemonsets'] === true,
          deleteEmptyDirData: values['delete-emptydir-data'] === true,
          force: values.force === true,
          gracePeriodSeconds: values['grace-period'] ? parseInteger(String(values['grace-period']), '--grace-period') : -1,
          timeoutSeconds: seconds('timeout', DEFAULT_RUN_OPTIONS.drain.timeoutSeconds),
          skipWaitForDeleteTimeoutSeconds: seconds('skip-wait-for-delete-timeout', 0),
        },
      };
      const pending = parsePending(values);
      const textfileDir = values['textfile-dir'] === undefined ? undefined : validateTextfileDir(String(values['textfile-dir']));
      if (viaAgent(values.via)) {
        refuseNotCarried(values);
        const spec = { nodeName: options.node, command: 'upgrade' as const, output: json ? ('json' as const) : ('text' as const), upgrade: upgradeSpecOf(options, pending) };
        return runViaAgent({ spec, kubeconfig: values.kubeconfig, context: values.context, stop: stopping.signal, io });
      }
      // A node silent while its unfinished run's reboot is under way is waited for by the run, not refused here.
      const rebooting = async (cluster: Cluster) => rebootInFlight(journalOf(await readLease(cluster, options.leaseNamespace, options.node)));
      const access = await connectNode(options.node, values, (line) => io.stderr(`node-maint: ${line}\n`), rebooting);
      transport = access.transport;
      const progress = (l: string) => io.stderr(`${l}\n`);
      if (pending && !options.rollback) {
        options.targets = await pendingUpgradeTargets(access.cluster, transport, options, pending.origin, progress);
        if (Object.keys(options.targets).length === 0 && options.reboot === 'never') {
          io.stdout(json ? `${JSON.stringify({ node: options.node, result: 'nothing-to-do', exitCode: 0, pendingUpgrades: {} })}\n` : `No pending upgrade on ${options.node}${pending.origin ? ` from ${pending.origin}` : ''}: nothing to do.\n`);
          return 0;
        }
      }
      const report = await runUpgrade({ options, cluster: access.cluster, transport, events: progressPrinter(progress), stop: stopping.signal });
      if (textfileDir) await publishRunMetrics({ cluster: access.cluster, transport, report, dir: textfileDir, log: progress, stop: stopping.signal });
      io.stdout(json ? `${JSON.stringify(report, null, 2)}\n` : `${renderReport(report)}\n`);
      return report.exitCode;
    });
  } finally {
    stopping.dispose();
    await transport?.close();
  }
}
