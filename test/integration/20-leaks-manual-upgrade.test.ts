import { beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, auditNode, kubectl, kubectlJson, waitFor } from './bed.js';
import { deadReservations, nodeAudit, pinnedPodSpec, sandboxIds, upgradeByHandLikeTheFieldReport, waitForRunning } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

// Field report 000, reproduced on a docker node (upgradeByHandLikeTheFieldReport): the IPs it leaks, found and freed.
describe('leaks of a docker upgrade done by hand', () => {
  const [t] = useNodes('docker', 'resource:node-ipam', 'resource:calico');
  const ns = useNamespace();
  let leaked: string[] = [];

  beforeAll(async () => {
    await upgradeByHandLikeTheFieldReport(t, ns.name, 'leaky', 10);
    leaked = await deadReservations(t);
  });

  it('leaves leaked kubenet IPs, and the audit lists exactly those', async () => {
    expect(leaked.length).toBeGreaterThanOrEqual(10);
    const result = await nodeAudit(t);
    expect(result.code, result.stderr).toBe(13);
    const report = JSON.parse(result.stdout);
    const listed = report.findings.filter((f: any) => f.class === 'ip-reservation-leaked').map((f: any) => f.evidence.ip).sort();
    expect(listed).toEqual(leaked);
    expect(report.ranges[0]).toMatchObject({ network: 'kubenet', usable: 125, leaked: leaked.length });
    expect(report.findings.filter((f: any) => f.class === 'cni-cache-orphan').length).toBeGreaterThanOrEqual(leaked.length);
  });

  it('reclaim frees them while pods start, never an IP of a running pod; a new pod gets an IP', async () => {
    const scaling = kubectl('-n', ns.name, 'scale', 'deployment', 'leaky', '--replicas', '20');
    const result = await auditNode([t.name, '--reclaim', '--grace', '0', '--interval', '3', '--output', 'json', ...t.flags]);
    await scaling;
    expect(result.code, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout);
    const freedFiles = outcome.outcomes.filter((o: any) => ['freed', 'released'].includes(o.verdict)).map((o: any) => o.target);
    expect(freedFiles.length).toBeGreaterThanOrEqual(leaked.length);
    const pods = await waitForRunning(ns.name, 'app=leaky', 20);
    // Every running pod on the node still holds its reservation, owned by its live sandbox.
    const sandboxes = await sandboxIds(t);
    for (const pod of pods) {
      const owner = (await t.sh(`head -n1 /var/lib/cni/networks/kubenet/${pod.status.podIP} | tr -d '\\r'`)).trim();
      expect(sandboxes).toContain(owner);
      expect(await t.sh(`docker inspect -f '{{index .Config.Labels "io.kubernetes.pod.uid"}}' ${owner}`)).toContain(pod.metadata.uid);
    }
    expect(await deadReservations(t)).toEqual([]);
    const backups = await t.sh(`find ${outcome.backupDir} -type f | wc -l`);
    expect(Number(backups)).toBeGreaterThanOrEqual(leaked.length);
    await applyObjects([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'fresh', namespace: ns.name }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } }]);
    await waitFor(async () => Boolean((await kubectlJson('get', 'pod', '-n', ns.name, 'fresh')).status.podIP), 120_000, 'the new pod to get an IP');
  });

  it('reclaim run again frees nothing, and the node audits clean', async () => {
    const again = await auditNode([t.name, '--reclaim', '--grace', '0', '--interval', '2', '--output', 'json', ...t.flags]);
    expect(again.code, again.stderr).toBe(0);
    const outcome = JSON.parse(again.stdout);
    expect(outcome.outcomes).toEqual([]);
    expect(outcome.after.findings).toEqual([]);
  });
});
