import { beforeAll, describe, expect, it } from 'vitest';
import { bed, upgradeNode } from './bed.js';
import { expectServing, report, upgradeArgs } from './faults.js';
import { deadReservations, nodeAudit, upgradeByHandLikeTheFieldReport } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

// Nothing cleared without a backup: after the field report's hand-done upgrade (leaked kubenet IPs with their CNI
// cache entries), the runbook's teardown frees them by DEL replay; what it consumes is saved on the node first.
describe('the teardown backs up what it replays and removes', () => {
  const [t] = useNodes('docker', 'resource:node-ipam');
  const ns = useNamespace();
  let leakedIps: string[] = [];
  let cacheEntries: string[] = [];

  beforeAll(async () => {
    await upgradeByHandLikeTheFieldReport(t, ns.name, 'leaky-backup', 6);
    leakedIps = await deadReservations(t);
    const audit = JSON.parse((await nodeAudit(t)).stdout);
    cacheEntries = audit.findings.filter((f: any) => f.class === 'cni-cache-orphan').map((f: any) => f.evidence.file);
  });

  it('saves every cache entry it replays and every reservation, before the DELs; the node ends clean', async () => {
    expect(leakedIps.length).toBeGreaterThanOrEqual(6);
    expect(cacheEntries.length).toBeGreaterThanOrEqual(leakedIps.length);
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(0);
    const r = report(result);
    const teardown = r.backups.find((b: string) => /\/teardown-\d+\.tgz$/.test(b));
    expect(teardown, JSON.stringify(r.backups)).toBeDefined();
    const replayed: string[] = r.steps.find((s: any) => s.name === 'teardown-sandboxes').detail.deletes.map((d: any) => d.entry);
    // Kubelet may still tear down an old sandbox itself (its own retry, now the node has its range back) before the
    // run's teardown: the rest of the leaked entries the run replays.
    expect(cacheEntries.filter((entry) => replayed.includes(entry)).length, JSON.stringify({ cacheEntries, replayed })).toBeGreaterThan(0);
    const listed = await t.sh(`tar -tzf ${teardown}`);
    // The cache entries it replayed, and the leaked reservations kubelet had not freed itself meanwhile.
    for (const file of replayed) expect(listed, file).toContain(file.slice(1));
    const leakedFiles = leakedIps.map((ip) => `/var/lib/cni/networks/kubenet/${ip}`);
    expect(leakedFiles.filter((file) => listed.includes(file.slice(1))).length, listed).toBeGreaterThan(0);
    await expectServing(t, bed().containerd.new);
  });
});
