import { writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, exists, kubectl, kubectlJson, objectPath, serviceAccountKubeconfig, upgradeNode, waitFor } from './bed.js';
import { report, upgradeArgs } from './faults.js';
import { crashAndCleanUp, nodeAudit, pinnedDeployment, pinnedPodSpec, sandboxIds, settledNodeAudit, waitForRunning } from './fixtures.js';
import { CLUSTER_IPAM } from './leases.js';
import { onLeasedNode, useNamespace, type TestNode } from './pool.js';

// A real whereabouts network (v0.9.2, built by the bed) on containerd nodes: pod IPs come from one cluster-wide range,
// each allocation an entry of an IPPool in kube-system, made and released by the plugin through the bed's API server
// as a ServiceAccount with whereabouts' own ClusterRole. whereabouts swallows every error of its DEL: a sandbox
// stopped and removed while the plugin cannot read its pools leaves its address allocated for good.
const ns = useNamespace();
const RANGE = '10.210.0.0/16';
const POOL = 'kube-system/10.210.0.0-16';
const DIR = '/etc/node-maint-test-whereabouts';
const CONF = '/etc/cni/net.d/00-whereabouts.conflist';
const GROUP = 'whereabouts.cni.cncf.io';
const conflist = JSON.stringify({
  cniVersion: '0.4.0',
  name: 'whereabouts-pods',
  // Leader election as an operator of a loaded cluster tunes it: whereabouts' defaults (a 1.5 s lease, 1 s to renew) lose
  // it on these 2 busy cores, and its DEL then drops the release silently (the first full suite with test 53 saw it).
  plugins: [{ type: 'bridge', bridge: 'cni-wb0', isGateway: true, ipMasq: false, ipam: { type: 'whereabouts', range: RANGE, exclude: ['10.210.0.0/28'], gateway: '10.210.0.1', configuration_path: `${DIR}/whereabouts.conf`, leader_lease_duration: 15000, leader_renew_deadline: 10000, leader_retry_period: 2000 } }],
});
// Its leader election's Lease and the pods it reads, apart from its pools: a test takes the pools away alone.
const roles = [
  { rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['*'] }, { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] }, { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update', 'get'] }], name: 'lease' },
  { rules: [{ apiGroups: [GROUP], resources: ['ippools', 'overlappingrangeipreservations', 'nodeslicepools'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }], name: 'pools' },
];
const clusterRole = (name: string) => `node-maint-test-whereabouts-${name}`;
const binding = (t: TestNode, role: string) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `${clusterRole(role)}-${t.name}` },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole(role) }, subjects: [{ kind: 'ServiceAccount', name: `wb-${t.name}`, namespace: ns.name }],
});
const canReadPools = async (t: TestNode) =>
  (await kubectl('auth', 'can-i', 'list', `ippools.${GROUP}`, '-n', 'kube-system', `--as=system:serviceaccount:${ns.name}:wb-${t.name}`).catch((e: Error) => e.message)).trim().endsWith('yes');

beforeAll(async () => {
  await applyObjects(roles.map((r) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: clusterRole(r.name) }, rules: r.rules })));
});

/** The pool's allocations, as "IP podref id" lines, of this file's pods whose names start with `prefix`. */
async function allocations(prefix: string): Promise<string[]> {
  const pool = await kubectlJson('get', `ippools.${GROUP}`, '-n', 'kube-system', '10.210.0.0-16').catch(() => ({ spec: { allocations: {} } }));
  return Object.entries<any>(pool.spec.allocations ?? {})
    .filter(([, a]) => a.podref.startsWith(`${ns.name}/${prefix}`))
    .map(([offset, a]) => `10.210.${Math.floor(Number(offset) / 256)}.${Number(offset) % 256} ${a.podref} ${a.id}`)
    .sort();
}

/**
 * Runs the case on a containerd node whose pods' network is whereabouts; puts the node's network back after. Every
 * node's network shares the one pool: a case that strands a gone pod's entry, or reclaims --cluster-wide (which
 * releases every gone pod's entry of it, and every Calico leak), holds CLUSTER_IPAM, so that no other such case runs
 * beside it.
 */
const onWhereaboutsNode = (fn: (t: TestNode) => Promise<void>, ...resources: Array<`resource:${string}`>) =>
  onLeasedNode('containerd', async (t) => {
    // One ServiceAccount per node (a case before may have used this node: applied, not created).
    await applyObjects([{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: `wb-${t.name}`, namespace: ns.name } }, ...roles.map((r) => binding(t, r.name))]);
    const { kubeconfig } = await serviceAccountKubeconfig(ns.name, `wb-${t.name}`);
    const flat = `${kubeconfig}.flat`;
    writeFileSync(flat, JSON.stringify({ datastore: 'kubernetes', kubernetes: { kubeconfig: `${DIR}/whereabouts.kubeconfig` } }));
    await t.sh(`mkdir -p ${DIR}`);
    await t.put(kubeconfig, `${DIR}/whereabouts.kubeconfig`);
    await t.put(flat, `${DIR}/whereabouts.conf`);
    // Beside the node's other CNI plugins (Debian's containerd: /usr/lib/cni).
    const binDir = (await t.sh('for d in /opt/cni/bin /usr/lib/cni; do [ -x $d/bridge ] && echo $d && break; done')).trim();
    await t.put(bed().whereabouts, `${binDir}/whereabouts`);
    // containerd picks the first config in the directory up as it changes: new sandboxes are whereabouts'.
    await t.sh(`printf '%s' '${conflist}' > ${CONF}`);
    try {
      await fn(t);
    } finally {
      // Every pod of the node back on the node's own network, released through whereabouts while it still can.
      await t.sh(`rm -f ${CONF}`);
      await kubectl('delete', 'pod', '-A', '--field-selector', `spec.nodeName=${t.name}`, '--wait=true', '--timeout=120s').catch(() => undefined);
      await waitFor(async () => {
        const pods = (await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${t.name}`)).items;
        return pods.length > 0 && pods.every((p: any) => p.status.phase === 'Running' && p.status.podIP && !p.status.podIP.startsWith('10.210.'));
      }, 180_000, `${t.name}'s pods back on its own network`);
      await t.sh(`rm -rf ${DIR} ${binDir}/whereabouts; ip link delete cni-wb0 2>/dev/null || true`);
      await kubectl('delete', 'clusterrolebinding', ...roles.map((r) => `${clusterRole(r.name)}-${t.name}`), '--ignore-not-found');
    }
  }, ...resources);

describe('a node whose pods get their IPs from whereabouts', () => {
  it.concurrent("is upgraded end to end: the smoke pod's IP proven by its IPPool entry, every allocation of the teardown released", onWhereaboutsNode(async (t) => {
    const before = await pinnedDeployment(ns.name, 'web', t.name, 2);
    expect(before.map((p: any) => p.status.podIP)).toEqual([expect.stringMatching(/^10\.210\./), expect.stringMatching(/^10\.210\./)]);
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(0);
    const prove = report(result).steps.find((s: any) => s.name === 'prove-node');
    expect(prove.summary).toMatch(new RegExp(`^smoke pod got IP 10\\.210\\.\\d+\\.\\d+, allocated in whereabouts pool ${POOL} to live sandbox [0-9a-f]{12};`));
    // The drained pods' allocations were released by the teardown's DELs; the pods came back with new ones.
    const after = await waitForRunning(ns.name, 'app=web', 2);
    // A DEL whereabouts dropped on the busy bed is made again when the started kubelet removes the dead sandbox: waited for.
    const want = after.map((p: any) => p.status.podIP).sort();
    await waitFor(async () => JSON.stringify((await allocations('web-')).map((l) => l.split(' ')[0])) === JSON.stringify(want), 90_000, 'only the new pods\' allocations').catch(() => undefined);
    expect((await allocations('web-')).map((l) => l.split(' ')[0])).toEqual(want);
    // Audited while the pods are still being deleted (their grace period is 2 s): termination in progress is no leak.
    await kubectl('-n', ns.name, 'delete', 'deployment', 'web');
    const audit = await nodeAudit(t);
    expect(audit.code, `${audit.stderr}${audit.stdout}`).toBe(0);
    expect(JSON.parse(audit.stdout).verdict).toBe('clean');
  }));

  it.concurrent("leaks while whereabouts cannot read its pools: found (a failed pod bound here counts against the node, a gone pod's is the cluster's) and reclaimed, backed up first", onWhereaboutsNode(async (t) => {
    // whereabouts gives a pod's next sandbox the address its last one had (same pod and interface): a pod that restarts
    // heals its own entry. keeper never restarts (a Job's pod, say); goner is deleted.
    const pod = (name: string, restartPolicy: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns.name }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name, restartPolicy } });
    await applyObjects([pod('keeper', 'Never'), pod('goner', 'Always')]);
    const running = await Promise.all(['keeper', 'goner'].map(async (name) => {
      await waitFor(async () => (await kubectlJson('get', 'pod', '-n', ns.name, name)).status.podIP?.startsWith('10.210.') ?? false, 120_000, `${name} on whereabouts`);
      const ip = (await kubectlJson('get', 'pod', '-n', ns.name, name)).status.podIP as string;
      return { ip, sandbox: (await t.sh(`crictl pods -q --state ready --namespace ${ns.name} --name '^${name}$'`)).trim() };
    }));
    const [keeper, goner] = running as [{ ip: string; sandbox: string }, { ip: string; sandbox: string }];

    // The plugin loses its pools (its Lease still works): keeper's sandbox is stopped and removed (OOM, eviction by the
    // runtime), goner is deleted.
    await kubectl('delete', 'clusterrolebinding', `${clusterRole('pools')}-${t.name}`);
    await waitFor(async () => !(await canReadPools(t)), 30_000, 'whereabouts without its pools');
    const t0 = Date.now();
    await kubectl('-n', ns.name, 'delete', 'pod', 'goner', '--wait=false');
    // crictl's own 2 s deadline is too short on a busy machine for a teardown whose DEL cannot read the pools.
    await t.sh(`crictl -t 120s stopp ${keeper.sandbox} >/dev/null && crictl -t 120s rmp ${keeper.sandbox} >/dev/null`);
    await waitFor(async () => !(await exists(objectPath('pod', 'goner', ns.name))), 120_000, 'goner deleted');
    // Both sandboxes gone (goner's removed here unless kubelet's clean-up was first), and no DEL of whereabouts under way
    // on the node: one queued behind its leader election (kubelet's own stop of keeper's sandbox) released keeper's
    // entry once the pools were back, in a full run. Once the sandboxes are gone no DEL can come for them.
    await waitFor(async () => {
      await t.sh(`crictl -t 120s rmp -f ${goner.sandbox} >/dev/null 2>&1 || true`);
      const listed = `{ crictl -t 60s pods -q || echo unanswered; } | grep -x -e ${keeper.sandbox} -e ${goner.sandbox} -e unanswered`;
      return (await t.sh(`${listed}; pgrep -x whereabouts; true`)).trim() === '';
    }, 120_000, "keeper's and goner's sandboxes gone, no whereabouts DEL under way on the node");
    console.log(`27: whereabouts without its pools for ${Date.now() - t0} ms`);
    expect([...(await allocations('keeper')), ...(await allocations('goner'))]).toEqual(expect.arrayContaining([`${keeper.ip} ${ns.name}/keeper ${keeper.sandbox}`, `${goner.ip} ${ns.name}/goner ${goner.sandbox}`]));
    await applyObjects([binding(t, 'pools')]);
    await waitFor(async () => canReadPools(t), 30_000, 'whereabouts with its pools again');
    // keeper may not restart (a Job's pod, say): it fails, and no sandbox of its ever takes its allocation over again.
    await waitFor(async () => (await kubectlJson('get', 'pod', '-n', ns.name, 'keeper')).status.phase === 'Failed', 120_000, 'keeper failed');

    // The node's own audit judges what is bound here; a gone pod's allocation is no node's: --cluster-wide reads it.
    const ownRun = await nodeAudit(t);
    const own = JSON.parse(ownRun.stdout);
    // What the audit saw, said if it finds no leak for keeper (a full run saw that once; its cause is not known yet).
    expect([own.findings.map((f: any) => f.evidence.pod), own.clusterFindings], `${ownRun.stderr}${ownRun.stdout}`).toEqual([[`${ns.name}/keeper`], []]);
    const audit = await nodeAudit(t, ['--cluster-wide']);
    expect(audit.code, audit.stderr).toBe(13);
    const found = JSON.parse(audit.stdout);
    expect(found.findings.map((f: any) => [f.class, f.evidence.ip, f.evidence.pod])).toEqual([['whereabouts-ip-leaked', keeper.ip, `${ns.name}/keeper`]]);
    const mine = (pod: string) => [`${ns.name}/keeper`, `${ns.name}/goner`].includes(pod);
    expect(found.clusterFindings.filter((f: any) => mine(f.evidence.pod)).map((f: any) => [f.class, f.evidence.ip, f.evidence.pod])).toEqual([['whereabouts-ip-leaked', goner.ip, `${ns.name}/goner`]]);

    // Allocated minutes ago: with an hour's grace each waits by its reservation's age, and says why and when.
    const young = await nodeAudit(t, ['--reclaim', '--cluster-wide', '--interval', '1', '--grace', '3600']);
    expect(JSON.parse(young.stdout).whereabouts.filter((o: any) => mine(o.finding.evidence.pod))).toEqual([]);
    for (const pod of ['keeper', 'goner']) expect(young.stderr).toMatch(new RegExp(`left alone: whereabouts-ip-leaked: .*${ns.name}/${pod}.*\\(younger than --grace 3600s \\(\\d+s old\\): releasable in \\d+s\\)`));
    const reclaim = await nodeAudit(t, ['--reclaim', '--cluster-wide', '--grace', '0', '--interval', '1']);
    expect(reclaim.code, reclaim.stderr).toBe(0);
    const result = JSON.parse(reclaim.stdout);
    const ours = result.whereabouts.filter((o: any) => mine(o.finding.evidence.pod));
    expect(ours.map((o: any) => [o.verdict, o.finding.evidence.ip]).sort()).toEqual([['freed', goner.ip], ['freed', keeper.ip]].sort());
    expect(result.after.verdict).toBe('clean');
    expect([...(await allocations('keeper')), ...(await allocations('goner'))]).toEqual([]);
    // What was released is on the node, as it was.
    const saved = await t.sh(`cat ${result.backupDir}/whereabouts-kube-system-10.210.0.0-16-*.json`);
    expect(saved).toContain(`"id":"${keeper.sandbox}"`);
    expect(saved).toContain(`"id":"${goner.sandbox}"`);
  }, ...CLUSTER_IPAM));

  it.concurrent("after a crash whose sandboxes' records were wiped before kubelet came back: the pods keep their addresses; a pod deleted meanwhile strands its allocation, found by --cluster-wide and reclaimed", onWhereaboutsNode(async (t) => {
    const before = await pinnedDeployment(ns.name, 'crash', t.name, 3);
    const [gone, ...kept] = before.map((p: any) => ({ name: p.metadata.name as string, ip: p.status.podIP as string }));
    const oldSandboxes = await sandboxIds(t, 'all');
    const goneSandbox = (await t.sh(`crictl pods -q --no-trunc --state ready --namespace ${ns.name} --name '^${gone!.name}$'`)).trim();
    // containerd's state wiped after the power cut (no DEL ever runs for the old sandboxes); one pod deleted meanwhile.
    await crashAndCleanUp(t, () => kubectl('-n', ns.name, 'delete', 'pod', gone!.name, '--wait=false'));
    await waitFor(async () => !(await exists(objectPath('pod', gone!.name, ns.name))), 180_000, `${gone!.name} deleted`);
    const after = await waitForRunning(ns.name, 'app=crash', 3);
    // whereabouts gives a pod's new sandbox the address its entry has (same pod and interface): the pods that came back
    // kept theirs, and their entries name their new sandboxes. The deleted pod's entry names a sandbox no DEL will reach.
    const now = new Map(after.map((p: any) => [p.metadata.name, p.status.podIP]));
    expect(kept.map((p) => now.get(p.name))).toEqual(kept.map((p) => p.ip));
    expect(await allocations(gone!.name)).toEqual([`${gone!.ip} ${ns.name}/${gone!.name} ${goneSandbox}`]);

    // Not the node's (its pod is gone): its own audit finds only host-local's and libcni's records the wipe stranded
    // (of the sandboxes from before the crash), the cluster-wide one finds that entry, exactly.
    const own = await settledNodeAudit(t);
    expect(own.findings.filter((f: any) => f.class === 'whereabouts-ip-leaked' || !oldSandboxes.includes(f.evidence.containerId))).toEqual([]);
    const wide = await settledNodeAudit(t, ['--cluster-wide']);
    const ours = wide.clusterFindings.filter((f: any) => oldSandboxes.includes(f.evidence.containerId));
    expect(ours.map((f: any) => [f.class, f.evidence.ip, f.evidence.containerId])).toEqual([['whereabouts-ip-leaked', gone!.ip, goneSandbox]]);
    const reclaim = JSON.parse((await nodeAudit(t, ['--reclaim', '--cluster-wide', '--grace', '0', '--interval', '1'])).stdout);
    // libcni's cache still had the sandbox's result: the reclaim replays its DEL through whereabouts first, which
    // releases the entry as the plugin does; the API release after it finds the entry gone and says so.
    expect(reclaim.outcomes.filter((o: any) => o.target.includes(goneSandbox)).map((o: any) => o.verdict)).toEqual(['released', 'released']);
    expect(reclaim.whereabouts.filter((o: any) => o.finding.evidence.containerId === goneSandbox).map((o: any) => [o.verdict, o.detail])).toEqual([['gone', `${gone!.ip} in pool ${POOL} already released since the audit`]]);
    expect(reclaim.after.verdict).toBe('clean');
    expect(await allocations(gone!.name)).toEqual([]);
    expect((await Promise.all([...now.keys()].map((name) => allocations(name)))).flat().map((l) => l.split(' ')[0]).sort()).toEqual([...now.values()].sort());
  }, ...CLUSTER_IPAM));
});
