import { agentBundle, type KubeObject } from '../agent/bundle.js';
import { factsConfigMapName, type NodeFacts } from '../agent/facts.js';
import { AGENT_NAMESPACE, isEnded, runsPath, type MaintenanceRun } from '../agent/run-object.js';
import { Cluster, isNotFound } from '../cluster/api.js';
import { listAll } from '../cluster/list.js';
import type { Pod } from '../cluster/types.js';
import { RunbookError } from '../errors.js';
import { waitUntil } from '../wait.js';
import { runCommand } from './command.js';
import { parseDuration } from './duration.js';
import { processIo, type CliIo } from './io.js';

export const AGENT_UNINSTALL_HELP = `Usage: npm run agent:uninstall -- [--kubeconfig PATH] [--context NAME] [--timeout DURATION]

Removes the node-maint agent (runbooks/agent/) from the cluster and from its nodes: each node's agent first removes
what it staged there (its runtime, its runs' output and credentials; the runs' backups in /var/lib/node-maint/backups
stay), never while a run's unit is there; then every object of the bundle is deleted, its MaintenanceRuns and the
nodes' facts with it. runbooks/rbac.yaml (the runbook's own rights, for runs over SSH) stays.

  --timeout DURATION   (300s) for every node's agent to say it removed its files, and for the objects to go

Exit codes: 0 removed; 9 a MaintenanceRun is under way (nothing removed); 10 a node's agent refused, or did not say
within --timeout (the nodes named; the bundle is kept: run it again); 2 usage; 5 the API unreachable.`;

const DAEMONSET = `/apis/apps/v1/namespaces/${AGENT_NAMESPACE}/daemonsets/node-maint-agent`;

/** Where the API keeps an object of the bundle. */
function pathOf(o: KubeObject): string {
  const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : ['', o.apiVersion];
  const plural = `${o.kind.toLowerCase()}${o.kind.endsWith('s') ? 'es' : 's'}`.replace(/ys$/, 'ies');
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return `${base}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${plural}/${o.metadata.name}`;
}

export async function agentUninstallMain(argv: string[], io: CliIo = processIo): Promise<number> {
  return runCommand(argv, io, { options: { timeout: { type: 'string' } }, help: AGENT_UNINSTALL_HELP }, async (values) => {
    const timeoutMs = (values.timeout ? parseDuration(String(values.timeout), '--timeout') : 300) * 1000;
    const say = (line: string) => io.stderr(`node-maint: ${line}\n`);
    const cluster = await Cluster.connect({ kubeconfig: values.kubeconfig, context: values.context, onRetry: say });
    const runs = await listAll<MaintenanceRun>(cluster, runsPath).catch((e: unknown) => (isNotFound(e) ? [] : Promise.reject(e)));
    const underWay = runs.filter((r) => !isEnded(r) && r.status?.phase);
    if (underWay.length > 0) throw new RunbookError('locked', `a run is under way on ${underWay.map((r) => r.metadata.name).join(', ')}: nothing was removed (stop it, or let it end, then uninstall)`);
    await cleanNodes(cluster, timeoutMs, say);
    const objects = agentBundle().reverse();
    for (const o of objects) await cluster.request('DELETE', pathOf(o), { propagationPolicy: 'Foreground' }).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
    await waitUntil('the agent\'s objects to go', async () => {
      const left: string[] = [];
      for (const o of objects) if (await cluster.get(pathOf(o)).then(() => true, (e: unknown) => (isNotFound(e) ? false : Promise.reject(e)))) left.push(`${o.kind} ${o.metadata.name}`);
      return left.length === 0 ? true : `left: ${left.join(', ')}`;
    }, { timeoutMs, intervalMs: 2_000, onChange: say });
    io.stdout(`The node-maint agent is removed: ${objects.length} objects deleted, and its files from its nodes.\n`);
    return 0;
  });
}

/** Every node's agent asked to remove its files (its DaemonSet's args), and waited for until each says it did. */
async function cleanNodes(cluster: Cluster, timeoutMs: number, say: (line: string) => void): Promise<void> {
  const ds = await cluster.get<{ metadata: { generation: number } }>(DAEMONSET).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
  if (!ds) return say('no agent DaemonSet (node-maint/node-maint-agent): nothing to remove from the nodes');
  // Every pod replaced at once: the agents are idle (no run under way), and each has one thing left to do.
  await cluster.request('PATCH', DAEMONSET, [
    { op: 'add', path: '/spec/template/spec/containers/0/args', value: ['--uninstall'] },
    { op: 'add', path: '/spec/updateStrategy', value: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } } },
  ], 'application/json-patch+json');
  say('asked every node\'s agent to remove its files (its DaemonSet\'s args: --uninstall)');
  const outcomes = new Map<string, string>();
  try {
    await waitUntil('every node\'s agent to remove its files', async () => {
      const pods = await listAll<Pod>(cluster, `/api/v1/namespaces/${AGENT_NAMESPACE}/pods?labelSelector=${encodeURIComponent('app.kubernetes.io/name=node-maint-agent')}`);
      const nodes = pods.filter((p) => (p.spec as { containers: Array<{ args?: string[] }> }).containers[0]?.args?.includes('--uninstall')).map((p) => p.spec.nodeName!);
      const all = pods.map((p) => p.spec.nodeName!);
      for (const node of nodes) {
        const facts = await cluster.get<{ data?: { facts?: string } }>(`/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps/${factsConfigMapName(node)}`).catch(() => undefined);
        const said = (JSON.parse(facts?.data?.facts ?? '{}') as NodeFacts).uninstall;
        if (said) outcomes.set(node, said);
      }
      const waiting = all.filter((n) => !outcomes.has(n));
      return waiting.length === 0 ? true : `${outcomes.size} of ${all.length} node(s) done; waiting for ${waiting.slice(0, 5).join(', ')}${waiting.length > 5 ? ', ...' : ''}`;
    }, { timeoutMs, intervalMs: 2_000, onChange: say });
  } catch (e) {
    throw new RunbookError('preflight', `${(e as Error).message}: the bundle is kept (run the uninstall again once those nodes answer)`, { cause: e });
  }
  for (const [node, said] of outcomes) say(`${node}: ${said}`);
  const refused = [...outcomes].filter(([, said]) => said.startsWith('refused'));
  if (refused.length > 0) throw new RunbookError('preflight', `the agent on ${refused.map(([n]) => n).join(', ')} refused to remove its files: the bundle is kept (run the uninstall again once their runs ended)`);
}
