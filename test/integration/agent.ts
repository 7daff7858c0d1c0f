import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { dump, load } from 'js-yaml';
import { expect } from 'vitest';
import { agentBundle, type KubeObject } from '../../src/agent/bundle.js';
import { applyObjects, kubectl, kubectlJson, serviceAccountKubeconfig, waitFor } from './bed.js';
import type { TestNode } from './pool.js';

// The node-maint agent on leased pool nodes or kind's: its image built from dist/ and loaded on the nodes, the shipped
// bundle (runbooks/agent/, after runbooks/rbac.yaml) with that image, scheduled only on nodes a test labels; callers
// that hold only the shipped requester's rights (runbooks/agent/requester.yaml), never cluster-admin.
const exec = promisify(execFile);
/** The label that puts the tests' agent on a node. */
export const AGENT_TEST_LABEL = 'node-maint.io/agent-test';
const LABEL = AGENT_TEST_LABEL;
/** No kube-proxy on the bed (nor in its kind): the Service address kubelet gives pods leads nowhere; on the bed's pool
 * the node's own forward to the API does. */
export const BED_API_ENV = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '6443' };
const selector = 'app.kubernetes.io/name=node-maint-agent';
type Kubectl = (...args: string[]) => Promise<string>;

/** The cluster an agent runs in: the bed's (its nodes reach the API on their own forward), or kind's (a real Service). */
export interface AgentCluster {
  kubectl: Kubectl;
  sh: (node: string, script: string) => Promise<string>;
  /** No kube-proxy serves the Service: the agent is told where the API is (KUBERNETES_SERVICE_HOST and _PORT). */
  apiEnv: Record<string, string>;
}

export const bedCluster = (nodes: TestNode[]): AgentCluster => ({ kubectl, sh: (node, script) => nodes.find((t) => t.name === node)!.sh(script), apiEnv: BED_API_ENV });

/**
 * The owner's policy on the bed: the shipped one, and what the bed's drains need (its fixtures are bare pods, some
 * with emptyDir, evicted with a short grace: DRAIN_FLAGS). Everything else stays refused, as shipped.
 */
export const BED_POLICY = { force: true, deleteEmptyDirData: true, gracePeriodOverride: true };

/** The shipped policy with the bed's drain options allowed, as its text. */
function bedPolicyText(): string {
  const shipped = agentBundle().find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'node-maint-agent-policy') as any;
  return dump({ ...(load(shipped.data['policy.yaml']) as object), ...BED_POLICY });
}

/** The shipped bundle as a test cluster needs it: the image just built (never pulled), scheduled only on nodes a test labels. */
export function manifest(image: string, { label = LABEL, apiEnv = BED_API_ENV }: { label?: string; apiEnv?: Record<string, string> } = {}): KubeObject[] {
  const docs = agentBundle();
  for (const d of docs) {
    if (d.kind === 'ConfigMap' && d.metadata.name === 'node-maint-agent-policy') (d as any).data['policy.yaml'] = bedPolicyText();
    if (d.kind !== 'DaemonSet') continue;
    const pod = (d as any).spec.template.spec;
    pod.nodeSelector = { [label]: 'on' };
    const [c] = pod.containers;
    Object.assign(c, { image, imagePullPolicy: 'Never' });
    c.env.push(...Object.entries(apiEnv).map(([name, value]) => ({ name, value })));
  }
  return docs;
}

export async function agentPods(node: string, run: Kubectl = kubectl): Promise<any[]> {
  const get = ['get', 'pods', '-n', 'node-maint', '-l', selector, '--field-selector', `spec.nodeName=${node}`];
  // On the bed, answered in this process (kubectlJson); kind's through its kubectl.
  return (run === kubectl ? await kubectlJson(...get) : JSON.parse(await run(...get, '-o', 'json'))).items;
}

/** The agent's image built from dist/ and loaded into the nodes' runtimes; its tag. */
export async function loadAgentImage(names: string[]): Promise<string> {
  const { stdout } = await exec('bash', ['testbed/ctl', 'agent-image', ...names]);
  return stdout.trim().split('\n').at(-1)!;
}

const requesters = new Map<Kubectl, Promise<string>>();

/**
 * A kubeconfig whose user holds only the shipped requester's rights (a ServiceAccount bound to requester.yaml's
 * ClusterRole and Role, as its header says to bind them): what the tests' callers use.
 */
export function requesterKubeconfig(run: Kubectl = kubectl): Promise<string> {
  let made = requesters.get(run);
  if (!made) {
    made = (async () => {
      // The shipped namespaces and requester roles (a site applies the whole bundle; a test may ask before it).
      await applyObjects(agentBundle().filter((o) => o.kind === 'Namespace' || o.metadata.name === 'node-maint-requester'), run);
      await run('-n', 'default', 'create', 'serviceaccount', 'node-maint-test-requester', '--dry-run=client', '-o', 'json').then((sa) => applyObjects([JSON.parse(sa)], run));
      const subject = { kind: 'ServiceAccount', name: 'node-maint-test-requester', namespace: 'default' };
      await applyObjects([
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'node-maint-test-requester' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'node-maint-requester' }, subjects: [subject] },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'node-maint-test-requester', namespace: 'node-maint' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'node-maint-requester' }, subjects: [subject] },
      ], run);
      return (await serviceAccountKubeconfig('default', 'node-maint-test-requester', run)).kubeconfig;
    })();
    requesters.set(run, made);
  }
  return made;
}

/** The shipped objects applied (runbooks/rbac.yaml first, then the agent's bundle) with the image built for the test. */
export async function installAgent(cluster: Pick<AgentCluster, 'kubectl' | 'apiEnv'>, image: string): Promise<void> {
  await cluster.kubectl('apply', '-f', 'runbooks/rbac.yaml');
  await applyObjects(manifest(image, { apiEnv: cluster.apiEnv }), cluster.kubectl);
}

/** Runs `fn` with the agent Ready on the bed's nodes; the agent, its runs, facts and files gone from them after. */
export async function withAgent(nodes: TestNode | TestNode[], fn: () => Promise<void>): Promise<void> {
  const all = Array.isArray(nodes) ? nodes : [nodes];
  await withAgentOn(bedCluster(all), all.map((t) => t.name), fn);
}

/** Runs `fn` with the agent Ready on the cluster's named nodes (the image loaded into their runtimes), and none of it after. */
export async function withAgentOn(cluster: AgentCluster, names: string[], fn: () => Promise<void>): Promise<void> {
  const image = await loadAgentImage(names);
  await installAgent(cluster, image);
  for (const n of names) await cluster.kubectl('label', 'node', n, `${LABEL}=on`, '--overwrite');
  try {
    for (const n of names) {
      await waitFor(async () => (await agentPods(n, cluster.kubectl)).some((p) => p.spec.containers[0].image === image && p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')), 120_000, `the agent Ready on ${n}`);
    }
    await fn();
  } catch (e) {
    // The case's own failure is what is reported; a clean-up that fails after it (a node left with kubelet stopped
    // keeps the agent's pod Terminating) is only said.
    await removeAgent(cluster, names).catch((c: Error) => console.log(`after the failure, the agent's clean-up failed too: ${c.message}`));
    throw e;
  }
  await removeAgent(cluster, names);
}

/** The agent gone from the nodes (their label taken off), with their MaintenanceRuns, facts and files. */
export async function removeAgent(cluster: AgentCluster, names: string[]): Promise<void> {
  for (const n of names) {
    await cluster.kubectl('label', 'node', n, `${LABEL}-`);
    await cluster.kubectl('delete', 'maintenancerun', n, '--ignore-not-found');
    await waitFor(async () => (await agentPods(n, cluster.kubectl)).length === 0, 120_000, `the agent gone from ${n}`);
    await cluster.kubectl('-n', 'node-maint', 'delete', 'configmap', `node-maint-facts-${n}`, '--ignore-not-found');
    // The runtime the agent staged (about 110 MB a node) and its runs' output: an aging bed fills with them otherwise.
    await cluster.sh(n, 'rm -rf /var/lib/node-maint/agent');
  }
}

/**
 * Runs `fn` with the agent installed as the docs say (runbooks/rbac.yaml, then `kubectl apply -k` of an overlay of
 * runbooks/agent/ that names the image and puts it on the nodes the test labels), then removed as they say (npm run
 * agent:uninstall): every object of the bundle gone, and the files the agent staged gone from its nodes.
 */
export async function withDocumentedInstall(cluster: AgentCluster, names: string[], kubeconfig: string, fn: () => Promise<void>): Promise<void> {
  const image = await loadAgentImage(names);
  const overlay = mkdtempSync(join(tmpdir(), 'node-maint-overlay-'));
  const [newName, newTag] = image.split(':');
  const env = Object.entries(cluster.apiEnv).map(([name, value]) => `{op: add, path: /spec/template/spec/containers/0/env/-, value: {name: ${name}, value: "${value}"}}`);
  writeFileSync(join(overlay, 'kustomization.yaml'), [
    'apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization',
    `resources: [${relative(overlay, resolve('runbooks/agent'))}]`,
    `images: [{name: node-maint/agent, newName: ${newName}, newTag: ${newTag}}]`,
    'patches:',
    '  - target: {kind: DaemonSet, name: node-maint-agent}',
    '    patch: |',
    ...[`{op: add, path: /spec/template/spec/nodeSelector, value: {${LABEL}: "on"}}`, '{op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: Never}', ...env].map((p) => `      - ${p}`),
    '  - target: {kind: ConfigMap, name: node-maint-agent-policy}',
    '    patch: |',
    `      - {op: replace, path: /data/policy.yaml, value: ${JSON.stringify(bedPolicyText())}}`,
  ].join('\n'));
  await cluster.kubectl('apply', '-f', 'runbooks/rbac.yaml');
  await cluster.kubectl('apply', '-k', overlay);
  for (const n of names) await cluster.kubectl('label', 'node', n, `${LABEL}=on`, '--overwrite');
  try {
    for (const n of names) await waitFor(async () => (await agentPods(n, cluster.kubectl)).some((p) => p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')), 120_000, `the agent Ready on ${n}`);
    await fn();
    const { stdout } = await exec('node', ['runbooks/agent-uninstall.mjs', '--kubeconfig', kubeconfig]);
    expect(stdout).toMatch(/^The node-maint agent is removed: \d+ objects deleted, and its files from its nodes\.\n$/);
    for (const kind of ['maintenanceruns', 'crd/maintenanceruns.node-maint.io', 'ns/node-maint', 'ns/node-maint-smoke', 'clusterrole/node-maint-agent', 'clusterrole/node-maint-requester', 'validatingadmissionpolicy', 'priorityclass/node-maint-agent']) {
      const left = await cluster.kubectl('get', ...kind.split(' '), '--ignore-not-found', '-o', 'name').catch((e: Error) => (/the server doesn't have a resource type/.test(String((e as { stderr?: string }).stderr ?? e)) ? '' : Promise.reject(e)));
      expect(left.split('\n').filter((l) => l.includes('node-maint')), kind).toEqual([]);
    }
    for (const n of names) expect((await cluster.sh(n, 'ls -d /var/lib/node-maint/agent /run/node-maint/agent 2>/dev/null; true')).trim()).toBe('');
  } finally {
    for (const n of names) await cluster.kubectl('label', 'node', n, `${LABEL}-`);
    await cluster.kubectl('delete', '-k', overlay, '--ignore-not-found', '--wait=false').catch(() => undefined);
    rmSync(overlay, { recursive: true, force: true });
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
