import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { loadAll } from 'js-yaml';
import { expect } from 'vitest';
import { applyObjects, kubectl, waitFor } from './bed.js';
import type { TestNode } from './pool.js';

// The node-maint agent on leased pool nodes or kind's: its image built from dist/ and loaded on the nodes, the shipped
// DaemonSet (runbooks/agent.yaml) with that image, scheduled only on nodes a test labels.
const exec = promisify(execFile);
/** The label that puts the tests' agent on a node. */
export const AGENT_TEST_LABEL = 'node-maint.io/agent-test';
const LABEL = AGENT_TEST_LABEL;
/** No kube-proxy on the bed (nor in its kind): the Service address kubelet gives pods leads nowhere; on the bed's pool
 * the node's own forward to the API does. */
export const BED_API_ENV = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '6443' };
const selector = 'app.kubernetes.io/name=node-maint-agent';

/** The cluster an agent runs in: the bed's (its nodes reach the API on their own forward), or kind's (a real Service). */
export interface AgentCluster {
  kubectl: (...args: string[]) => Promise<string>;
  sh: (node: string, script: string) => Promise<string>;
  /** No kube-proxy serves the Service: the agent is told where the API is (KUBERNETES_SERVICE_HOST and _PORT). */
  apiEnv: Record<string, string>;
}

export const bedCluster = (nodes: TestNode[]): AgentCluster => ({ kubectl, sh: (node, script) => nodes.find((t) => t.name === node)!.sh(script), apiEnv: BED_API_ENV });

/** The shipped manifest as a test cluster needs it: the image just built (never pulled), scheduled only on nodes a test labels. */
export function manifest(image: string, { label = LABEL, apiEnv = BED_API_ENV }: { label?: string; apiEnv?: Record<string, string> } = {}): any[] {
  const docs = loadAll(readFileSync('runbooks/agent.yaml', 'utf8')) as any[];
  for (const d of docs) {
    if (d.kind !== 'DaemonSet') continue;
    const pod = d.spec.template.spec;
    pod.nodeSelector = { [label]: 'on' };
    const [c] = pod.containers;
    Object.assign(c, { image, imagePullPolicy: 'Never' });
    c.env.push(...Object.entries(apiEnv).map(([name, value]) => ({ name, value })));
  }
  return docs;
}

export const agentPods = async (node: string, run: (...args: string[]) => Promise<string> = kubectl) =>
  JSON.parse(await run('get', 'pods', '-n', 'node-maint', '-l', selector, '--field-selector', `spec.nodeName=${node}`, '-o', 'json')).items as any[];

/** The agent's image built from dist/ and loaded into the nodes' runtimes; its tag. */
export async function loadAgentImage(names: string[]): Promise<string> {
  const { stdout } = await exec('bash', ['testbed/ctl', 'agent-image', ...names]);
  return stdout.trim().split('\n').at(-1)!;
}

/** Runs `fn` with the agent Ready on the bed's nodes; the agent, its requests, facts and files gone from them after. */
export async function withAgent(nodes: TestNode | TestNode[], fn: () => Promise<void>): Promise<void> {
  const all = Array.isArray(nodes) ? nodes : [nodes];
  await withAgentOn(bedCluster(all), all.map((t) => t.name), fn);
}

/** Runs `fn` with the agent Ready on the cluster's named nodes (the image loaded into their runtimes), and none of it after. */
export async function withAgentOn(cluster: AgentCluster, names: string[], fn: () => Promise<void>): Promise<void> {
  const image = await loadAgentImage(names);
  await cluster.kubectl('apply', '-f', 'runbooks/rbac.yaml');
  await applyObjects(manifest(image, { apiEnv: cluster.apiEnv }), cluster.kubectl);
  for (const n of names) await cluster.kubectl('label', 'node', n, `${LABEL}=on`, '--overwrite');
  try {
    for (const n of names) {
      await waitFor(async () => (await agentPods(n, cluster.kubectl)).some((p) => p.spec.containers[0].image === image && p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')), 120_000, `the agent Ready on ${n}`);
    }
    await fn();
  } finally {
    await removeAgent(cluster, names);
  }
}

/** The agent gone from the nodes (their label taken off), with its requests, facts and files. */
export async function removeAgent(cluster: AgentCluster, names: string[]): Promise<void> {
  for (const n of names) {
    await cluster.kubectl('label', 'node', n, `${LABEL}-`);
    await waitFor(async () => (await agentPods(n, cluster.kubectl)).length === 0, 120_000, `the agent gone from ${n}`);
    await cluster.kubectl('-n', 'node-maint', 'delete', 'configmap', `node-maint-agent-${n}`, `node-maint-facts-${n}`, '--ignore-not-found');
    // The runtime the agent staged (about 110 MB a node) and its runs' output: an aging bed fills with them otherwise.
    await cluster.sh(n, 'rm -rf /var/lib/node-maint/agent');
  }
}

/** Runs `fn` with the nodes' sshd stopped and disabled (so a reboot does not start it), and checks it stayed down. */
export async function withoutSsh(nodes: TestNode | TestNode[], fn: () => Promise<void>): Promise<void> {
  const all = Array.isArray(nodes) ? nodes : [nodes];
  for (const t of all) await t.sh('systemctl disable --now ssh 2>/dev/null');
  try {
    await fn();
    for (const t of all) expect((await t.sh('systemctl is-active ssh || true')).trim()).toBe('inactive');
  } finally {
    for (const t of all) await t.sh('systemctl enable --now ssh 2>/dev/null');
  }
}
