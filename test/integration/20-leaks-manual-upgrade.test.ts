import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, deadReservations, waitForRunning, kubectl, kubectlJson, realNodeAudit, resetRealNode, sh, waitFor, auditNode, sshFlags, upgradeByHandLikeTheFieldReport } from './bed.js';

// Field report 000, reproduced on the real node (upgradeByHandLikeTheFieldReport): the IPs it leaks, found and freed.
describe('leaks of a docker upgrade done by hand', () => {
  let leaked: string[] = [];

  beforeAll(async () => {
    await resetRealNode();
    await upgradeByHandLikeTheFieldReport('leaky', 10);
    leaked = await deadReservations();
  });

  afterAll(async () => {
    await kubectl('-n', 'demo', 'delete', 'deployment', 'leaky', '--ignore-not-found');
  });

  it('leaves leaked kubenet IPs, and the audit lists exactly those', async () => {
    expect(leaked.length).toBeGreaterThanOrEqual(10);
    const result = await realNodeAudit();
    expect(result.code, result.stderr).toBe(13);
    const report = JSON.parse(result.stdout);
    const listed = report.findings.filter((f: any) => f.class === 'ip-reservation-leaked').map((f: any) => f.evidence.ip).sort();
    expect(listed).toEqual(leaked);
    expect(report.ranges[0]).toMatchObject({ network: 'kubenet', usable: 125, leaked: leaked.length });
    expect(report.findings.filter((f: any) => f.class === 'cni-cache-orphan').length).toBeGreaterThanOrEqual(leaked.length);
  });

  it('reclaim frees them while pods start, never an IP of a running pod; a new pod gets an IP', async () => {
    const scaling = kubectl('-n', 'demo', 'scale', 'deployment', 'leaky', '--replicas', '20');
    const result = await auditNode([bed().realNode, '--reclaim', '--grace', '0', '--interval', '3', '--output', 'json', ...sshFlags(bed().realNode)]);
    await scaling;
    expect(result.code, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout);
    const freedFiles = outcome.outcomes.filter((o: any) => ['freed', 'released'].includes(o.verdict)).map((o: any) => o.target);
    expect(freedFiles.length).toBeGreaterThanOrEqual(leaked.length);
    const pods = await waitForRunning('app=leaky', 20);
    // Every running pod on the node still holds its reservation, owned by its live sandbox.
    for (const pod of pods) {
      const owner = (await sh(`head -n1 /var/lib/cni/networks/kubenet/${pod.status.podIP} | tr -d '\\r'`)).trim();
      expect(await sh(`docker inspect -f '{{index .Config.Labels "io.kubernetes.pod.uid"}}' ${owner}`)).toContain(pod.metadata.uid);
    }
    expect(await deadReservations()).toEqual([]);
    const backups = await sh(`find ${outcome.backupDir} -type f | wc -l`);
    expect(Number(backups)).toBeGreaterThanOrEqual(leaked.length);
    await kubectl('-n', 'demo', 'run', 'fresh', '--image=testbed/busybox:1', '--image-pull-policy=Never', `--overrides={"spec":{"nodeName":"${bed().realNode}"}}`, '--', 'sleep', '3600');
    await waitFor(async () => Boolean((await kubectlJson('get', 'pod', '-n', 'demo', 'fresh')).status.podIP), 120_000, 'the new pod to get an IP');
    await kubectl('-n', 'demo', 'delete', 'pod', 'fresh', '--wait=false');
  });

  it('reclaim run again frees nothing, and the node audits clean', async () => {
    const again = await auditNode([bed().realNode, '--reclaim', '--grace', '0', '--interval', '2', '--output', 'json', ...sshFlags(bed().realNode)]);
    expect(again.code, again.stderr).toBe(0);
    const outcome = JSON.parse(again.stdout);
    expect(outcome.outcomes).toEqual([]);
    expect(outcome.after.findings).toEqual([]);
  });
});
