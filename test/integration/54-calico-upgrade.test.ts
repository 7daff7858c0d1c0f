import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, kubectl, kubectlJson, serviceAccountKubeconfig, upgradeNode, waitFor } from './bed.js';
import { allocations, blocksOf, calicoctlCheck, GROUP } from './calico.js';
import { report, upgradeArgs, withKubeconfig } from './faults.js';
import { nodeAudit, pinnedDeployment, pinnedPodSpec, sandboxIds, waitForRunning } from './fixtures.js';
import { useNamespace, useNodes, type TestNode } from './pool.js';

// Calico nodes of both runtimes (testbed/lib/calico.sh): the real CNI plugin and calico-ipam allocate every pod's
// address in blocks affine to its node, through the bed's API. An upgrade end to end with the default proof, then the
// field's case (seed 004): a node's blocks full, calico-ipam borrows an address of another node's block, and the
// lender's blackhole route for the block (bird's, installed here as bird would) swallows the borrower's traffic.
// Every run as the ServiceAccount runbooks/rbac.yaml ships (the proof reads Calico's records under it).
const ns = useNamespace();
const [DOCKER, CONTAINERD] = useNodes('docker-calico', 'containerd-calico');
const inPool = (ip: string) => ip.startsWith(bed().calico.pool.split('.').slice(0, 2).join('.'));
let asShipped = '';
const upgrade = (t: TestNode) => upgradeNode(withKubeconfig(upgradeArgs(t, bed().containerd.new), asShipped));

beforeAll(async () => {
  await kubectl('apply', '-f', 'runbooks/rbac.yaml');
  asShipped = (await serviceAccountKubeconfig('kube-system', 'node-maint')).kubeconfig;
});

describe('a Calico node (calico-ipam, Kubernetes datastore)', () => {
  for (const [flavour, node] of [['docker', DOCKER], ['containerd', CONTAINERD]] as const) {
    it.concurrent(`on ${flavour}: upgraded end to end, the smoke pod proven by its calico-ipam allocation, every drained pod's address released by the plugin's DEL`, async () => {
      const t: TestNode = node;
      const app = `web-${flavour}`;
      const pods = await pinnedDeployment(ns.name, app, t.name, 2);
      const blocks = await blocksOf(t.name);
      // Addresses of the node's own blocks, recorded for the pods' sandboxes (handle k8s-pod-network.<sandbox id>).
      const before = (await allocations()).filter((a) => pods.some((p) => p.status.podIP === a.ip));
      expect(before.map((a) => [a.blockNode, a.pod, inPool(a.ip)]).sort()).toEqual(pods.map((p) => [t.name, `${ns.name}/${p.metadata.name}`, true]).sort());
      const oldSandboxes = await sandboxIds(t);
      expect(before.every((a) => oldSandboxes.includes(a.handle.replace('k8s-pod-network.', '')))).toBe(true);

      const result = await upgrade(t);
      expect(result.code, result.stderr).toBe(0);
      const steps = report(result).steps;
      const prove = steps.find((s: any) => s.name === 'prove-node');
      expect(prove.summary).toMatch(new RegExp(`^smoke pod got IP 10\\.233\\.\\d+\\.\\d+, allocated by calico-ipam in block 10\\.233\\.\\d+\\.\\d+/26 affine to ${t.name} to live sandbox [0-9a-f]{12} \\(handle k8s-pod-network\\.[0-9a-f]{64}\\), released by calico-ipam after;.* audit clean`));
      expect(steps.find((s: any) => s.name === 'teardown-sandboxes').summary).toMatch(/^\d+ attachment\(s\) torn down, \d+ sandbox\(es\) removed/);
      // clear-state leaves Calico's datastore alone: the node keeps its blocks.
      expect(await blocksOf(t.name)).toEqual(expect.arrayContaining(blocks));
      // No address is left to a sandbox from before the upgrade: the teardown's DELs released them by handle.
      await waitForRunning(ns.name, `app=${app}`, 2);
      const left = (await allocations()).filter((a) => oldSandboxes.some((id) => a.handle === `k8s-pod-network.${id}`));
      expect(left).toEqual([]);
      // calicoctl, on the same cluster, finds nothing of this node's unused.
      const check = await calicoctlCheck();
      expect(check.allocations.filter((a) => a.node === t.name && !a.inUse)).toEqual([]);
      const audit = await nodeAudit(t);
      expect(audit.code, audit.stdout).toBe(0);
      await kubectl('-n', ns.name, 'delete', 'deployment', app, '--wait=false');
    });
  }
});

describe("the field's case: an address borrowed from another node's block, behind that node's blackhole", () => {
  // A small pool of two /30 blocks, asked for by the test's pods alone: B claims one, A fills the other, and A's next
  // pod borrows from B's block (strictAffinity false, the bed's IPAM config as kubespray's).
  const POOL = { name: `${ns.name}-borrow`, cidr: '10.234.0.0/29' };
  const annotations = { 'cni.projectcalico.org/ipv4pools': JSON.stringify([POOL.name]) };
  const pod = (name: string, node: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns.name, annotations, labels: { app: 'borrow' } }, spec: { ...pinnedPodSpec(node), nodeName: node } });
  const ipOf = async (name: string) => {
    let ip = '';
    await waitFor(async () => Boolean((ip = (await kubectlJson('get', 'pod', '-n', ns.name, name)).status.podIP ?? '')), 120_000, `${name} running`);
    return ip;
  };
  let blackhole = '';

  afterAll(async () => {
    // B, held cordoned by its proof, is put back: its run's --rollback (the conflict goes with the pods below).
    await upgradeNode([...upgradeArgs(DOCKER, bed().containerd.new), '--rollback']).catch(() => undefined);
    await kubectl('-n', ns.name, 'delete', 'pods', '-l', 'app=borrow', '--wait=true', '--timeout=120s').catch(() => undefined);
    if (blackhole) await DOCKER.sh(`ip route del ${blackhole} || true`).catch(() => undefined);
    await kubectl('delete', `ippools.${GROUP}`, POOL.name, '--ignore-not-found');
    for (const kind of ['blockaffinities', 'ipamblocks']) {
      for (const o of (await kubectlJson('get', `${kind}.${GROUP}`)).items) {
        if (String(o.spec.cidr).startsWith('10.234.0.')) await kubectl('delete', `${kind}.${GROUP}`, o.metadata.name, '--ignore-not-found');
      }
    }
  });

  it("B's audit names A's pod in its block and says B's pods cannot reach it; B's proof holds it cordoned", async () => {
    const [A, B] = [CONTAINERD, DOCKER];
    // Both back on the old runtime (the cases before upgraded them): B's run below has an upgrade to make.
    await Promise.all([A.reset(), B.reset()]);
    await applyObjects([{ apiVersion: `${GROUP}/v1`, kind: 'IPPool', metadata: { name: POOL.name }, spec: { cidr: POOL.cidr, blockSize: 30, ipipMode: 'Never', vxlanMode: 'Never', nodeSelector: 'all()' } }]);
    await applyObjects([pod('on-b', B.name)]);
    const onB = await ipOf('on-b');
    const [lenderBlock] = (await blocksOf(B.name)).filter((c) => c.startsWith('10.234.0.'));
    expect(lenderBlock).toBeDefined();
    for (const i of [1, 2, 3, 4]) await applyObjects([pod(`on-a-${i}`, A.name)]).then(() => ipOf(`on-a-${i}`));
    expect((await blocksOf(A.name)).filter((c) => c.startsWith('10.234.0.'))).toHaveLength(1);
    // A's block is full and the pool has no block left: A's fifth pod gets an address of B's block.
    await applyObjects([pod('borrower', A.name)]);
    const borrowed = await ipOf('borrower');
    const recorded = (await allocations()).find((a) => a.ip === borrowed)!;
    expect([recorded.block, recorded.blockNode, recorded.pod, recorded.node]).toEqual([lenderBlock, B.name, `${ns.name}/borrower`, A.name]);
    expect(borrowed).not.toBe(onB);
    const check = await calicoctlCheck();
    expect(check.allocations.find((a) => a.ip === borrowed)).toMatchObject({ inUse: true, borrowed: true, node: A.name });

    // Without bird's blackhole B routes nowhere special for it: no finding (its routes were read, not guessed).
    const quiet = JSON.parse((await nodeAudit(B)).stdout);
    expect(quiet.findings.filter((f: any) => f.class === 'calico-ip-conflict')).toEqual([]);
    // bird's route for a block affine to B, as calico-node's bird installs it.
    blackhole = `blackhole ${lenderBlock} proto bird`;
    await B.sh(`ip route add ${blackhole}`);
    const audit = await nodeAudit(B);
    expect(audit.code, audit.stderr).toBe(13);
    const conflicts = JSON.parse(audit.stdout).findings.filter((f: any) => f.class === 'calico-ip-conflict');
    expect(conflicts.map((f: any) => f.message)).toEqual([`${borrowed} of pod ${ns.name}/borrower on ${A.name} is borrowed from block ${lenderBlock}, affine to ${B.name}, whose route for it is \`blackhole ${lenderBlock} proto bird\`: ${B.name}'s pods cannot reach it`]);
    // The borrower's own node has no finding of it: A reaches its pod by its own route.
    expect(JSON.parse((await nodeAudit(A)).stdout).findings.filter((f: any) => f.class === 'calico-ip-conflict')).toEqual([]);

    // The runbook on B: its proof finds the conflict after the upgrade and holds B cordoned (exit 13), saying why.
    const result = await upgrade(B);
    expect(result.code, result.stderr).toBe(13);
    expect(report(result).error.message).toContain(`${borrowed} of pod ${ns.name}/borrower on ${A.name} is borrowed from block ${lenderBlock}`);
    expect((await kubectlJson('get', 'node', B.name)).spec.unschedulable).toBe(true);
  });
});
