import { beforeAll, describe, expect, it } from 'vitest';
import { ordinalIn } from '../../src/node/cni/host-local.js';
import { applyObjects, auditNode, bedDocker, kubectl, kubectlJson, serviceAccountKubeconfig, waitFor } from './bed.js';
import { allocations, calicoctlCheck, GROUP } from './calico.js';
import { withKubeconfig } from './faults.js';
import { crashAndCleanUp, pinnedDeployment, pinnedPodSpec } from './fixtures.js';
import { CLUSTER_IPAM } from './leases.js';
import { useNamespace, useNodes, type TestNode } from './pool.js';

// What calico-ipam itself leaves behind, found by the audit and released by the reclaim, against `calicoctl ipam
// check` on the same cluster (the tool a Calico operator would check with): a crash whose sandboxes were cleaned up
// before kubelet came back, pods deleted while the node was down, a release interrupted half way (the block freed, the
// handle left, the pod still running), and a removed node. Every audit as the ServiceAccount runbooks/rbac.yaml
// ships for runs, every reclaim as reclaim's own. CLUSTER_IPAM: the cluster-wide reclaim releases whatever the
// cluster holds, so no other file's Calico or whereabouts leaks may be there meanwhile.
const ns = useNamespace();
// The crash on containerd: its state wiped, no DEL can run (on docker, cri-dockerd's checkpoints bring kubelet's DELs back).
const [CRASHED, OTHER] = useNodes('containerd-calico', 'docker-calico', ...CLUSTER_IPAM);
const as: { run: string; reclaim: string } = { run: '', reclaim: '' };
const audit = (t: TestNode, extra: string[] = [], kubeconfig = as.run) => auditNode(withKubeconfig([t.name, '--output', 'json', ...extra, ...t.flags], kubeconfig));
const reclaim = (t: TestNode, extra: string[] = []) => audit(t, ['--reclaim', '--grace', '0', '--interval', '1', ...extra], as.reclaim);
/** calicoctl's unused allocations (IP -> the pod its attributes name) among those recorded for these nodes. */
const unusedPerCalicoctl = async (nodes: string[]) =>
  (await calicoctlCheck()).allocations.filter((a) => !a.inUse && nodes.includes(a.node ?? '')).map((a) => `${a.ip} ${a.namespace}/${a.pod}`).sort();
const evidence = (findings: any[], cls: string) => findings.filter((f) => f.class === cls).map((f) => `${f.evidence.ip} ${f.evidence.pod}`).sort();

beforeAll(async () => {
  await kubectl('apply', '-f', 'runbooks/rbac.yaml');
  as.run = (await serviceAccountKubeconfig('kube-system', 'node-maint')).kubeconfig;
  as.reclaim = (await serviceAccountKubeconfig('kube-system', 'node-maint-reclaim')).kubeconfig;
});

describe('calico-ipam after a crash, a half-done release and a removed node', () => {
  // Kubelet posts a pod's address at the sync after the one that made its sandbox; a postStart hook holds that first
  // sync (as a slow image pull does), so calico-ipam has given the address while the pod's status has none: it is live.
  it("a pod whose address is not posted yet (a postStart hook holds kubelet's sync): neither reported nor released, and it keeps its address once it runs", async () => {
    await Promise.all([CRASHED, OTHER].map(async (t) => {
      const name = `held-${t.flavour}`;
      const hold = `until [ -e /released ]; do sleep 1; done # ${name}`;
      const container = { name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600000'], lifecycle: { postStart: { exec: { command: ['sh', '-c', hold] } } } };
      await applyObjects([{ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns.name }, spec: { ...pinnedPodSpec(t.name), containers: [container] } }]);
      // Released as a person would: the file the hook waits for, written into the container (a hook left holding
      // would hold the pod's deletion too).
      const hookPids = `pgrep -f '^sh -c until .* ${name}$'`;
      const release = () => t.sh(`for p in $(${hookPids}); do touch /proc/$p/root/released; done`);
      try {
        let given: string | undefined;
        await waitFor(async () => {
          given = (await allocations()).find((a) => a.pod === `${ns.name}/${name}`)?.ip;
          return given !== undefined && (await t.sh(`${hookPids} || true`)).trim() !== '';
        }, 120_000, `${name}'s address given and its hook running`);
        const pod = await kubectlJson('get', 'pod', '-n', ns.name, name);
        expect([pod.status.phase, pod.status.podIP]).toEqual(['Pending', undefined]);
        // The address as a whole JSON string: a block whose first address it is names it in its range ("first") too.
        const mentions = (items: any[]) => items.filter((f: any) => JSON.stringify(f).includes(`"${given}"`) || JSON.stringify(f).includes(name));
        expect(mentions(JSON.parse((await audit(t)).stdout).findings)).toEqual([]);
        const result = await reclaim(t);
        expect(result.code, result.stderr).toBe(0);
        const { plan, outcomes, calico } = JSON.parse(result.stdout);
        expect(mentions([plan, ...outcomes, ...calico])).toEqual([]);
        expect((await allocations()).filter((a) => a.ip === given).map((a) => a.pod)).toEqual([`${ns.name}/${name}`]);
        await release();
        await waitFor(async () => (await kubectlJson('get', 'pod', '-n', ns.name, name)).status.podIP === given, 60_000, `${name} running on ${given}`);
      } finally {
        await release();
      }
      await kubectl('-n', ns.name, 'delete', 'pod', name, '--grace-period=1');
    }));
  });

  it('a crash (sandboxes pruned before kubelet came back, two pods deleted while down): the audit lists what calicoctl calls unused, the reclaim frees it', async () => {
    const t = CRASHED;
    await pinnedDeployment(ns.name, 'crashed', t.name, 6);
    const bare = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns.name }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } });
    await applyObjects([bare('deleted-1'), bare('deleted-2')]);
    const mine = async () => (await allocations()).filter((a) => a.pod !== '' && a.blockNode === t.name);
    await waitFor(async () => (await kubectlJson('get', 'pods', '-n', ns.name)).items.filter((p: any) => p.status.phase === 'Running' && p.status.podIP).length === 8, 120_000, 'the eight pods running');
    // Every running pod's address in the node's blocks: the bed's node agent's too when it runs (what earlier files
    // left there is not ours); ours, all eight.
    const running = (await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${t.name}`)).items.map((p: any) => `${p.status.podIP} ${p.metadata.namespace}/${p.metadata.name}`);
    const before = (await mine()).filter((a) => running.includes(`${a.ip} ${a.pod}`));
    expect(before.filter((a) => a.pod.startsWith(`${ns.name}/`))).toHaveLength(8);
    await crashAndCleanUp(t, () => kubectl('-n', ns.name, 'delete', 'pod', 'deleted-1', 'deleted-2', '--force', '--grace-period=0'));
    await waitFor(async () => {
      const pods = (await kubectlJson('get', 'pods', '-n', ns.name, '-l', 'app=crashed')).items.filter((p: any) => p.status.phase === 'Running' && p.status.podIP);
      return pods.length === 6 && pods.every((p: any) => !before.some((a) => a.ip === p.status.podIP));
    }, 180_000, 'the six pods running on new sandboxes');
    // Every address from before the crash is still allocated: no DEL ran for the pruned sandboxes.
    const stranded = before.map((a) => `${a.ip} ${a.pod}`).sort();
    expect((await mine()).filter((a) => before.some((b) => b.handle === a.handle)).map((a) => `${a.ip} ${a.pod}`).sort()).toEqual(stranded);

    const found = await audit(t);
    expect(found.code, found.stderr).toBe(13);
    const leaked = evidence(JSON.parse(found.stdout).findings, 'calico-ip-leaked');
    // Every address from before the crash; and with whatever else is unused on the node, calicoctl's set exactly.
    expect(leaked).toEqual(expect.arrayContaining(stranded));
    expect(leaked).toEqual(await unusedPerCalicoctl([t.name]));
    // The node's blocks counted as ranges: every allocation of them (its tunnel address too), the leaked ones apart.
    const blocks = JSON.parse(found.stdout).ranges.filter((r: any) => r.network === 'calico-ipam');
    const own = (await allocations()).filter((a) => a.blockNode === t.name);
    expect(blocks.map((b: any) => b.cidr).sort()).toEqual([...new Set(own.map((a) => a.block))].sort());
    expect(blocks.reduce((n: number[], b: any) => [n[0]! + b.allocated, n[1]! + b.leaked], [0, 0])).toEqual([own.length, leaked.length]);

    const result = await reclaim(t);
    expect(result.code, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout);
    expect(outcome.after.verdict).toBe('clean');
    // Freed through the API, or already given back by the plugin's own DEL, replayed from libcni's cache first.
    expect(outcome.calico.map((o: any) => `${o.finding.evidence.ip} ${o.finding.evidence.pod}`).sort()).toEqual(leaked);
    expect(outcome.calico.every((o: any) => ['freed', 'gone'].includes(o.verdict))).toBe(true);
    expect(await unusedPerCalicoctl([t.name])).toEqual([]);
  });

  it('a release interrupted half way, then a removed node: the node audit, --cluster-wide and calicoctl agree where both look; the reclaim frees what calicoctl reports', async () => {
    const [t, gone] = [OTHER, CRASHED];
    await pinnedDeployment(ns.name, 'halfway', t.name, 1);
    await pinnedDeployment(ns.name, 'on-gone', gone.name, 2);
    // libcalico-go releases an address from its block, then the handle: a plugin killed in between leaves the block
    // free and the handle counting it. The same write as calico-ipam's, to the block of the pod's address.
    const [victim] = (await allocations()).filter((a) => a.pod.startsWith(`${ns.name}/halfway-`));
    const blocks = (await kubectlJson('get', `ipamblocks.${GROUP}`)).items;
    const block = blocks.find((b: any) => b.spec.cidr === victim!.block);
    const ordinal = ordinalIn(block.spec.cidr, victim!.ip)!;
    block.spec.allocations[ordinal] = null;
    block.spec.unallocated.push(ordinal);
    // (kubectl's own schema check refuses the block's null slots, which the API server takes.)
    await applyObjects([block], (...args) => kubectl('replace', '--validate=false', ...args.slice(1)));

    // The node is removed (its machine gone): the API's pod GC then deletes its pods; its blocks stay affine to it.
    await bedDocker('stop', '-t', '1', gone.container);
    await kubectl('delete', 'node', gone.name);
    await waitFor(async () => (await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${gone.name}`)).items.length === 0, 180_000, `the pods of ${gone.name} deleted`);
    try {
      const orphaned = (await allocations()).filter((a) => a.blockNode === gone.name && a.pod !== '').map((a) => `${a.ip} ${a.pod}`).sort();
      expect(orphaned.length).toBeGreaterThanOrEqual(3);

      const own = JSON.parse((await audit(t)).stdout);
      expect(own.findings.filter((f: any) => f.class === 'calico-ip-conflict').map((f: any) => f.message)).toEqual([
        `${victim!.ip} of pod ${victim!.pod} on ${t.name} lies in its node's block ${victim!.block}, which records it as free: calico-ipam may hand it to another pod`,
      ]);
      const wide = await audit(t, ['--cluster-wide']);
      expect(wide.code, wide.stderr).toBe(13);
      const report = JSON.parse(wide.stdout);
      const check = await calicoctlCheck();
      // The removed node's addresses: cluster-wide leaks, as calicoctl's unused ones.
      expect(evidence(report.clusterFindings, 'calico-ip-leaked')).toEqual(orphaned);
      expect(await unusedPerCalicoctl([gone.name])).toEqual(orphaned);
      // The half-done release's handle: ours and calicoctl's alike.
      expect(report.clusterFindings.filter((f: any) => f.class === 'calico-handle-leaked').map((f: any) => f.evidence.handleID)).toEqual([victim!.handle]);
      expect(check.leakedHandles).toContain(victim!.handle);
      // The pod on an address its block calls free: calicoctl's "in use ... but has no IPAM allocation".
      expect(check.text).toContain(`${victim!.ip} in use by Workload(${ns.name}/`);
      // What calicoctl does not look at: affinities of nodes that are gone (calico-kube-controllers' job).
      expect(report.clusterFindings.filter((f: any) => f.class === 'calico-affinity-orphan').map((f: any) => f.evidence.node)).toEqual(expect.arrayContaining([gone.name]));

      const result = await reclaim(t, ['--cluster-wide']);
      expect(result.code, result.stderr).toBe(13);
      const outcome = JSON.parse(result.stdout);
      const freed = (cls: string) => outcome.calico.filter((o: any) => o.finding.class === cls && o.verdict === 'freed');
      expect(freed('calico-ip-leaked').map((o: any) => `${o.finding.evidence.ip} ${o.finding.evidence.pod}`).sort(), JSON.stringify(outcome.calico.map((o: any) => [o.verdict, o.detail]))).toEqual(orphaned);
      expect(freed('calico-handle-leaked').map((o: any) => o.finding.evidence.handleID)).toEqual([victim!.handle]);
      expect(freed('calico-affinity-orphan').map((o: any) => o.finding.evidence.node)).toEqual(expect.arrayContaining([gone.name]));
      // Left to an operator: the pod on a free address (reclaim frees records, it does not take a pod's address).
      expect(outcome.after.findings.map((f: any) => f.class)).toEqual(['calico-ip-conflict']);
      expect(await unusedPerCalicoctl([gone.name, t.name])).toEqual([]);
      expect((await calicoctlCheck()).leakedHandles).not.toContain(victim!.handle);
    } finally {
      await kubectl('-n', ns.name, 'delete', 'deployment', 'halfway', 'on-gone', '--wait=false');
      await bedDocker('start', gone.container);
      await waitFor(async () => {
        const n = await kubectlJson('get', 'node', gone.name).catch(() => undefined);
        return n?.status?.conditions?.find((c: any) => c.type === 'Ready')?.status === 'True' && Boolean(n.spec.podCIDR);
      }, 180_000, `${gone.name} back as a new node`);
    }
  });
});
