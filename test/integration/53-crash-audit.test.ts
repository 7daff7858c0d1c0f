import { describe, expect, it } from 'vitest';
import { applyObjects, auditNode, kubectl, kubectlJson, waitFor } from './bed.js';
import { crashAndCleanUp, deployment, pinnedDeployment, reservationsDir, sandboxIds, waitForRunning } from './fixtures.js';
import { onLeasedNode, useNamespace, type TestNode } from './pool.js';

// A crash the tool did not do (a power cut: the node's container killed and started again), then a common clean-up
// before kubelet is back (docker's prune; containerd's state wiped). The sandboxes' records go before any DEL could run, so their
// host-local reservations stay under /var for good (k3s #5885, containerd/cri #948: "no IP addresses available in
// range" after reboots). The audit must list exactly those, reclaim must free them, and new pods must get IPs.
const reservations = async (t: TestNode) => (await t.sh(`ls ${reservationsDir(t)} | grep -E '^[0-9a-f.:]+$' || true`)).trim().split('\n').filter(Boolean).sort();

describe('the audit after a crash whose sandboxes\' records went before kubelet came back', () => {
  const ns = useNamespace();

  for (const flavour of ['docker', 'containerd'] as const) {
    it.concurrent(`a ${flavour} node with 10 pods: the stranded reservations listed exactly, reclaimed, and new pods get IPs`, onLeasedNode(flavour, async (t) => {
      const app = `crashed-${flavour}`;
      await pinnedDeployment(ns.name, app, t.name, 10);
      const before = await reservations(t);
      expect(before.length).toBeGreaterThanOrEqual(10);
      const oldSandboxes = await sandboxIds(t);
      await crashAndCleanUp(t);
      // Kubelet's new sandboxes, with new addresses (the API shows the old ones until kubelet has synced each pod).
      await waitFor(async () => {
        const pods = (await kubectlJson('get', 'pods', '-n', ns.name, '-l', `app=${app}`)).items.filter((p: any) => p.status.phase === 'Running' && p.status.podIP);
        return pods.length === 10 && pods.every((p: any) => !before.includes(p.status.podIP));
      }, 180_000, 'the 10 pods running on new sandboxes');
      // The old addresses were never released: kubelet's new sandboxes took new ones.
      const after = await reservations(t);
      const stranded = before.filter((ip) => after.includes(ip));
      expect(stranded).toEqual(before);

      const audit = await auditNode([t.name, '--output', 'json', ...t.flags]);
      expect(audit.code, audit.stderr).toBe(13);
      const findings = JSON.parse(audit.stdout).findings;
      const found = findings.filter((f: any) => f.class === 'ip-reservation-leaked').map((f: any) => f.evidence.ip).sort();
      expect(found).toEqual(stranded);
      // Every finding is the record of a sandbox from before the crash; libcni's cache entries of each (its pod
      // network and its loopback) are found too.
      expect(findings.filter((f: any) => !oldSandboxes.includes(f.evidence.containerId))).toEqual([]);
      const cached = findings.filter((f: any) => f.class === 'cni-cache-orphan').map((f: any) => f.evidence.containerId);
      expect(new Set(cached)).toEqual(new Set(oldSandboxes));
      expect(cached).toHaveLength(2 * oldSandboxes.length);

      const reclaim = await auditNode([t.name, '--reclaim', '--grace', '0', '--interval', '1', '--output', 'json', ...t.flags]);
      expect(reclaim.code, reclaim.stderr).toBe(0);
      expect(JSON.parse(reclaim.stdout).after.verdict).toBe('clean');
      expect((await reservations(t)).filter((ip) => stranded.includes(ip))).toEqual([]);
      // The freed range serves new pods.
      await applyObjects([deployment(ns.name, app, t.name, 14)]);
      await waitForRunning(ns.name, `app=${app}`, 14);
      await kubectl('-n', ns.name, 'delete', 'deployment', app, '--wait=false');
    }));
  }
});
