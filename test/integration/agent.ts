import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { loadAll } from 'js-yaml';
import { expect } from 'vitest';
import { applyObjects, kubectl, kubectlJson, waitFor } from './bed.js';
import type { TestNode } from './pool.js';

// The node-maint agent on a leased pool node: its image built from dist/ and loaded on the node, the shipped
// DaemonSet (runbooks/agent.yaml) with that image and the bed's API address, scheduled only on nodes a test labels.
const exec = promisify(execFile);
const LABEL = 'node-maint.io/agent-test';
const selector = 'app.kubernetes.io/name=node-maint-agent';

/** The shipped manifest as the bed needs it: the image just built (never pulled), the API where the nodes reach it. */
export function manifest(image: string, label = LABEL): any[] {
  const docs = loadAll(readFileSync('runbooks/agent.yaml', 'utf8')) as any[];
  for (const d of docs) {
    if (d.kind !== 'DaemonSet') continue;
    const pod = d.spec.template.spec;
    pod.nodeSelector = { [label]: 'on' };
    const [c] = pod.containers;
    Object.assign(c, { image, imagePullPolicy: 'Never' });
    // No kube-proxy on the bed: the Service address kubelet gives pods leads nowhere; the node's own forward does.
    c.env.push({ name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' }, { name: 'KUBERNETES_SERVICE_PORT', value: '6443' });
  }
  return docs;
}

export const agentPods = async (node: string) => (await kubectlJson('get', 'pods', '-n', 'node-maint', '-l', selector, '--field-selector', `spec.nodeName=${node}`)).items as any[];

/** Runs `fn` with the agent Ready on the nodes; the agent, its requests, facts and files gone from them after. */
export async function withAgent(nodes: TestNode | TestNode[], fn: () => Promise<void>): Promise<void> {
  const all = Array.isArray(nodes) ? nodes : [nodes];
  const { stdout } = await exec('bash', ['testbed/ctl', 'agent-image', ...all.map((t) => t.name)]);
  const image = stdout.trim().split('\n').at(-1)!;
  await kubectl('apply', '-f', 'runbooks/rbac.yaml');
  await applyObjects(manifest(image));
  for (const t of all) await kubectl('label', 'node', t.name, `${LABEL}=on`, '--overwrite');
  try {
    for (const t of all) {
      await waitFor(async () => (await agentPods(t.name)).some((p) => p.spec.containers[0].image === image && p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')), 120_000, `the agent Ready on ${t.name}`);
    }
    await fn();
  } finally {
    for (const t of all) {
      await kubectl('label', 'node', t.name, `${LABEL}-`);
      await waitFor(async () => (await agentPods(t.name)).length === 0, 120_000, `the agent gone from ${t.name}`);
      await kubectl('-n', 'node-maint', 'delete', 'configmap', `node-maint-agent-${t.name}`, `node-maint-facts-${t.name}`, '--ignore-not-found');
      // The runtime the agent staged (about 110 MB a node) and its runs' output: an aging bed fills with them otherwise.
      await t.sh('rm -rf /var/lib/node-maint/agent');
    }
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
