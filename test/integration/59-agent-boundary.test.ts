import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditNode, bed, kubectl, kubectlJson, upgradeNode, waitFor } from './bed.js';
import { agentPods, requesterKubeconfig, withAgent } from './agent.js';
import { containerdStatus, lease } from './faults.js';
import { onLeasedNode, type TestNode } from './pool.js';

// The agent as a trust boundary (issue 42), with the shipped manifests only: what a requester may ask is typed and
// within the owner's policy, whatever it writes by hand; an agent's token (as whoever holds its node would take it)
// writes only its own node's objects and mints only its runs' tokens, bound to its node; and so do those tokens.

/** A node no agent runs on: another node's name, for the objects an agent must not touch. */
const OTHER = 'boundary-test-other';

const run = (node: string, spec: Record<string, unknown>, requestedBy: string) => ({
  apiVersion: 'node-maint.io/v1alpha1', kind: 'MaintenanceRun', metadata: { name: node }, spec: { nodeName: node, requestedBy, command: 'upgrade', ...spec },
});

/** kubectl as the kubeconfig's user; its error's words when it is refused. */
async function as(kubeconfig: string, args: string[], stdin?: unknown): Promise<{ ok: boolean; out: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'boundary-'));
  const file = join(dir, 'object.json');
  if (stdin !== undefined) writeFileSync(file, JSON.stringify(stdin));
  try {
    const out = await kubectl('--kubeconfig', kubeconfig, ...args, ...(stdin !== undefined ? ['-f', file] : []));
    return { ok: true, out };
  } catch (e) {
    return { ok: false, out: String((e as { stderr?: string }).stderr ?? e) };
  }
}

/** A kubeconfig for a bare token on the bed's apiserver. */
async function tokenKubeconfig(token: string): Promise<string> {
  const admin = JSON.parse(await kubectl('config', 'view', '--raw', '--minify', '-o', 'json'));
  const file = join(mkdtempSync(join(tmpdir(), 'boundary-token-')), 'kubeconfig');
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 't', clusters: [{ name: 'bed', cluster: admin.clusters[0].cluster }], users: [{ name: 'u', user: { token } }], contexts: [{ name: 't', context: { cluster: 'bed', user: 'u' } }] }));
  return file;
}

/** Nothing ran on the node and nothing of it changed. */
async function untouched(t: TestNode): Promise<void> {
  expect((await t.sh("systemctl list-units --all --no-legend 'node-maint-run-*' | wc -l")).trim()).toBe('0');
  expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
  expect((await lease(t.name)).holder).toBeUndefined();
  expect(await containerdStatus(t)).toBe(`${bed().containerd.old} hi `);
}

describe('the agent as a trust boundary, with the shipped manifests', () => {
  it.concurrent('a request spelled to get past a string check is refused with words (by the API, or by the agent), nothing started, nothing changed', onLeasedNode('containerd', async (t) => {
    await withAgent(t, async () => {
      const requester = await requesterKubeconfig();
      const me = JSON.parse((await as(requester, ['auth', 'whoami', '-o', 'json'])).out).status.userInfo.username;
      const target = (version: string, pkg = 'containerd') => ({ upgrade: { targets: [{ package: pkg, version }] } });
      // Refused by the API itself: its schema, its rules, its admission policy.
      const byApi: Array<[unknown, RegExp]> = [
        [run(t.name, target('${X}1.6.20'), me), /spec\.upgrade\.targets\[0\]\.version in body should match/],
        [run(t.name, target('1.6.20%n'), me), /spec\.upgrade\.targets\[0\]\.version in body should match/],
        [run(t.name, target('1.6.20 --hook-before-drain=touch /tmp/x'), me), /spec\.upgrade\.targets\[0\]\.version in body should match/],
        [run(t.name, { upgrade: { targets: [{ package: 'containerd', version: bed().containerd.new }], hookBeforeDrain: 'touch /tmp/x' } }, me), /unknown field "spec\.upgrade\.hookBeforeDrain"/],
        [run(t.name, { command: 'audit', audit: { reclaim: true } }, me), /unknown field "spec\.audit\.reclaim"/],
        [{ ...run(t.name, target(bed().containerd.new), me), metadata: { name: OTHER } }, /a MaintenanceRun is named for its node/],
        [run(t.name, target(bed().containerd.new), 'system:admin'), new RegExp(`spec.requestedBy must name the requester as the API server knows it: ${me}`)],
      ];
      for (const [object, words] of byApi) {
        const r = await as(requester, ['create'], object);
        expect(r.ok, r.out).toBe(false);
        expect(r.out).toMatch(words);
      }
      // Well formed, and refused by the node's agent: what its owner's policy does not allow.
      const byAgent: Array<[Record<string, unknown>, string]> = [
        [target('1:9.2p1-2+deb12u3', 'openssh-server'), 'the package openssh-server (the agent\'s policy allows containerd, containerd.io, docker.io, docker-ce, docker-ce-cli, runc, cri-dockerd)'],
        [target('1.6.20~ds1-1+deb12u1'), `a downgrade: containerd ${bed().containerd.old} -> 1.6.20~ds1-1+deb12u1 (the agent's policy: downgrades: false)`],
        [{ upgrade: { targets: [{ package: 'containerd', version: bed().containerd.new }], allowNoRollback: true, proof: 'network-only' } }, "a run that could not roll back (the agent's policy: noRollback: false); the network-only proof (the agent's policy: networkOnlyProof: false)"],
        [{ upgrade: { pendingUpgrades: {} } }, "apt's pending upgrades (the agent's policy: pendingUpgrades: false)"],
      ];
      for (const [spec, words] of byAgent) {
        const r = await as(requester, ['create'], run(t.name, spec, me));
        expect(r.ok, r.out).toBe(true);
        await waitFor(async () => !!(await kubectlJson('get', 'maintenancerun', t.name)).status?.phase, 30_000, `the agent to decide on ${JSON.stringify(spec)}`);
        const { status } = await kubectlJson('get', 'maintenancerun', t.name);
        expect(status, JSON.stringify(spec)).toMatchObject({ phase: 'Refused', exitCode: 2, message: expect.stringContaining(words) });
        expect(status.message).toMatch(/^refused the request, which asks what the node's owner does not allow: .*; nothing was started$/);
        await untouched(t);
        // What an operator sees of it.
        const seen = (await as(requester, ['get', 'maintenanceruns'])).out;
        expect(seen).toMatch(/^NAME\s+NODE\s+COMMAND\s+PHASE\s+STEP\s+EXIT\s+AGE\n/);
        expect(seen).toMatch(new RegExp(`^${t.name}\\s+${t.name}\\s+upgrade\\s+Refused\\s+2\\s+\\d+s$`, 'm'));
        expect((await as(requester, ['delete', 'maintenancerun', t.name])).ok).toBe(true);
      }
      // The CLI says the same before it asks anything.
      const cli = await auditNode([t.name, '--via', 'agent', '--reclaim', '--output', 'json', '--kubeconfig', requester]);
      expect(cli.code).toBe(2);
      expect(JSON.parse(cli.stdout).error.message).toMatch(/^--reclaim does not go with --via agent: no request reaches a release of IPAM records/);
    });
  }));

  it.concurrent("an agent's token, taken from its node, writes only that node's objects and mints only its runs' tokens, bound to that node; so do those tokens", onLeasedNode('any', async (t) => {
    await withAgent(t, async () => {
      const [pod] = await agentPods(t.name);
      const agentToken = (await t.sh(`cat /var/lib/kubelet/pods/${pod.metadata.uid}/volumes/kubernetes.io~projected/*/token`)).trim();
      const agent = await tokenKubeconfig(agentToken);
      const requester = await requesterKubeconfig();
      const me = JSON.parse((await as(requester, ['auth', 'whoami', '-o', 'json'])).out).status.userInfo.username;
      expect((await as(requester, ['create'], run(OTHER, { upgrade: { reboot: 'always' } }, me))).ok).toBe(true);
      try {
        const refused = async (args: string[], words: RegExp, stdin?: unknown) => {
          const r = await as(agent, args, stdin);
          expect(r.ok, r.out).toBe(false);
          expect(r.out).toMatch(words);
        };
        expect(JSON.parse((await as(agent, ['auth', 'whoami', '-o', 'json'])).out).status.userInfo.extra['authentication.kubernetes.io/node-name']).toEqual([t.name]);
        await refused(['patch', 'maintenancerun', OTHER, '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Succeeded","exitCode":0}}'], new RegExp(`an agent writes only the status of its own node's MaintenanceRun \\(${t.name}\\), not ${OTHER}`));
        await refused(['patch', 'maintenancerun', OTHER, '--type=merge', '-p', '{"spec":{"stop":{"reason":"x"}}}'], /forbidden/);
        await refused(['-n', 'node-maint', 'create', 'configmap', `node-maint-facts-${OTHER}`, '--from-literal=facts={}'], new RegExp(`an agent writes only its own node's facts \\(node-maint/node-maint-facts-${t.name}\\)`));
        await refused(['-n', 'kube-system', 'run', 'escape', '--image=testbed/busybox:1', '--restart=Never'], /forbidden/);
        await refused(['-n', 'kube-system', 'create', 'token', 'node-maint'], /forbidden/);
        const tokenFor = (spec: Record<string, unknown>) => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec });
        const mint = (spec: Record<string, unknown>) => as(agent, ['create', '--raw', '/api/v1/namespaces/node-maint/serviceaccounts/node-maint-run/token'], tokenFor(spec));
        const ownNode = { apiVersion: 'v1', kind: 'Node', name: t.name };
        for (const spec of [{ expirationSeconds: 3600 }, { expirationSeconds: 3600, boundObjectRef: { ...ownNode, name: OTHER } }, { expirationSeconds: 86400, boundObjectRef: ownNode }]) {
          const r = await mint(spec);
          expect(r.ok, `${JSON.stringify(spec)}: ${r.out}`).toBe(false);
          expect(r.out).toContain(`an agent asks tokens only for its runs (node-maint/node-maint-run), bound to its own node (${t.name}), for 6 hours at most`);
        }
        // Its runs' token: bound to its node, and held to it.
        const minted = await mint({ expirationSeconds: 3600, boundObjectRef: ownNode });
        expect(minted.ok, minted.out).toBe(true);
        const runAs = await tokenKubeconfig(JSON.parse(minted.out).status.token);
        expect(JSON.parse((await as(runAs, ['auth', 'whoami', '-o', 'json'])).out).status.userInfo).toMatchObject({ username: 'system:serviceaccount:node-maint:node-maint-run', extra: { 'authentication.kubernetes.io/node-name': [t.name] } });
        const other = (await kubectlJson('get', 'nodes', '-l', 'node-maint.io/testbed=pool')).items.map((n: any) => n.metadata.name).find((n: string) => n !== t.name);
        const runRefused = async (args: string[], words: RegExp, stdin?: unknown) => {
          const r = await as(runAs, args, stdin);
          expect(r.ok, r.out).toBe(false);
          expect(r.out).toMatch(words);
        };
        await runRefused(['label', 'node', other, 'node-maint.io/boundary-test=x', '--overwrite'], new RegExp(`a run changes only its own node \\(${t.name}\\), not ${other}`));
        await runRefused(['-n', 'kube-system', 'run', 'escape', '--image=testbed/busybox:1', '--restart=Never'], /forbidden/);
        const pinned = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'escape', namespace: 'node-maint-smoke' }, spec: { nodeName: other, securityContext: { runAsNonRoot: true, runAsUser: 65534, seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'c', image: 'testbed/busybox:1', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }] } };
        await runRefused(['create'], new RegExp(`a run starts and removes only pods pinned to its own node \\(${t.name}\\)`), pinned);
        await runRefused(['create'], /violates PodSecurity "restricted/, { ...pinned, spec: { nodeName: t.name, hostPID: true, containers: [{ name: 'c', image: 'testbed/busybox:1' }] } });
        const otherLease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: `node-maint-${other}`, namespace: 'kube-system' }, spec: { holderIdentity: 'x' } };
        // create, not apply: another file may have left that Lease, and apply would patch it (refused by RBAC first).
        await runRefused(['create'], new RegExp(`a run holds only its own node's Lease \\(node-maint-${t.name}\\)`), otherLease);
      } finally {
        await kubectl('delete', 'maintenancerun', OTHER, '--ignore-not-found');
      }
    });
  }));
});
