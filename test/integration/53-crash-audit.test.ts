import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { applyObjects, auditNode, bed, kubectl, kubectlJson, waitFor } from './bed.js';
import { deployment, pinnedDeployment, reservationsDir, waitForRunning } from './fixtures.js';
import { onLeasedNode, useNamespace, type TestNode } from './pool.js';

// A crash the tool did not do (a power cut: the node's container killed and started again), then a common clean-up
// before kubelet is back: `docker container prune`. The sandboxes' records go before any DEL could run, so their
// host-local reservations stay under /var for good (k3s #5885, containerd/cri #948: "no IP addresses available in
// range" after reboots). The audit must list exactly those, reclaim must free them, and new pods must get IPs.
const docker = (...args: string[]) => promisify(execFile)('docker', ['-H', bed().bedDockerHost, ...args]).then((r) => r.stdout.trim());
const reservations = async (t: TestNode) => (await t.sh(`ls ${reservationsDir(t)} | grep -E '^[0-9a-f.:]+$' || true`)).trim().split('\n').filter(Boolean).sort();

describe('the audit after a crash whose sandboxes were pruned before kubelet came back', () => {
  const ns = useNamespace();

  it.concurrent('a docker node with 10 pods: the stranded reservations listed exactly, reclaimed, and new pods get IPs', onLeasedNode('docker', async (t) => {
    await pinnedDeployment(ns.name, 'crashed', t.name, 10);
    const before = await reservations(t);
    expect(before.length).toBeGreaterThanOrEqual(10);
    // Kubelet kept from starting at boot for the length of the clean-up, as an operator pruning first would have it.
    await t.sh('systemctl disable kubelet >/dev/null 2>&1');
    try {
      await docker('kill', t.container);
      await docker('start', t.container);
      await waitFor(async () => (await t.sh('systemctl is-active docker').catch(() => '')).trim() === 'active', 120_000, `docker up on ${t.name}`);
      await t.sh('docker container prune -f >/dev/null');
    } finally {
      await t.sh('systemctl enable --now kubelet >/dev/null 2>&1');
    }
    // Kubelet's new sandboxes, with new addresses (the API shows the old ones until kubelet has synced each pod).
    await waitFor(async () => {
      const pods = (await kubectlJson('get', 'pods', '-n', ns.name, '-l', 'app=crashed')).items.filter((p: any) => p.status.phase === 'Running' && p.status.podIP);
      return pods.length === 10 && pods.every((p: any) => !before.includes(p.status.podIP));
    }, 180_000, 'the 10 pods running on new sandboxes');
    // The old addresses were never released: kubelet's new sandboxes took new ones.
    const after = await reservations(t);
    const stranded = before.filter((ip) => after.includes(ip));
    expect(stranded).toEqual(before);

    const audit = await auditNode([t.name, '--output', 'json', ...t.flags]);
    expect(audit.code, audit.stderr).toBe(13);
    const found = JSON.parse(audit.stdout).findings.filter((f: any) => f.class === 'ip-reservation-leaked').map((f: any) => f.evidence.ip).sort();
    expect(found).toEqual(stranded);

    const reclaim = await auditNode([t.name, '--reclaim', '--grace', '0', '--interval', '1', '--output', 'json', ...t.flags]);
    expect(reclaim.code, reclaim.stderr).toBe(0);
    expect(JSON.parse(reclaim.stdout).after.verdict).toBe('clean');
    expect((await reservations(t)).filter((ip) => stranded.includes(ip))).toEqual([]);
    // The freed range serves new pods.
    await applyObjects([deployment(ns.name, 'crashed', t.name, 14)]);
    await waitForRunning(ns.name, 'app=crashed', 14);
    await kubectl('-n', ns.name, 'delete', 'deployment', 'crashed', '--wait=false');
  }));
});
