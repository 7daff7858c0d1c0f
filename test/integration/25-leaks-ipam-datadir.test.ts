import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, auditNode, kubectl } from './bed.js';
import { useNodes } from './pool.js';

// kindnetd's host-local keeps its reservations in /run/cni-ipam-state (its conflist's ipam.dataDir), not in
// /var/lib/cni/networks: the audit must read the dataDir each network config names. On a containerd node, kindnetd's
// network put first (as on a kind node, where it is kubelet's network; a later one would be another CNI user's, left
// alone), with a reservation whose container never existed.
const DEAD_ID = 'de'.repeat(32);
const LEAK = '/run/cni-ipam-state/kindnet/10.99.0.5';
const CONFLIST = '/etc/cni/net.d/05-kindnet.conflist';
const conflist = JSON.stringify({
  cniVersion: '0.3.1',
  name: 'kindnet',
  plugins: [{ type: 'ptp', ipMasq: false, ipam: { type: 'host-local', dataDir: '/run/cni-ipam-state', ranges: [[{ subnet: '10.99.0.0/24' }]] } }],
});

describe('host-local state kept where the network config says (dataDir)', () => {
  const [t] = useNodes('containerd', 'resource:calico');
  const audit = (extra: string[] = []) => auditNode([t.name, '--output', 'json', ...t.flags, ...extra]);
  beforeAll(async () => {
    await t.sh(`printf '%s' '${conflist}' > ${CONFLIST} && mkdir -p /run/cni-ipam-state/kindnet && printf '${DEAD_ID}\\r\\neth0' > ${LEAK}`);
  });
  afterAll(async () => {
    await t.sh(`rm -rf ${CONFLIST} /run/cni-ipam-state/kindnet`);
  });

  it('finds the leaked reservation under /run/cni-ipam-state, with its range counted from that network\'s config', async () => {
    const result = await audit();
    expect(result.code, result.stderr).toBe(13);
    const report = JSON.parse(result.stdout);
    expect(report.findings.filter((f: any) => f.class === 'ip-reservation-leaked').map((f: any) => f.evidence.file)).toEqual([LEAK]);
    expect(report.ranges.find((r: any) => r.network === 'kindnet')).toMatchObject({ cidr: '10.99.0.0/24', allocated: 1, leaked: 1 });
  });

  it('reclaim is refused (exit 9) while someone holds the node\'s Lease (in the namespace --lease-namespace names), and does nothing', async () => {
    // A fence by hand: an operator's Lease on the node, declared for an hour, where this cluster's runs keep theirs.
    await applyObjects([{ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: `node-maint-${t.name}`, namespace: 'default' },
      spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 3600, renewTime: new Date().toISOString().replace('Z', '000Z') } }]);
    try {
      const bad = await audit(['--reclaim', '--lease-namespace', 'default;id']);
      expect(bad.code, bad.stderr).toBe(2);
      expect(JSON.parse(bad.stdout).error.message).toContain('invalid lease namespace "default;id"');
      const result = await audit(['--reclaim', '--grace', '0', '--interval', '1', '--lease-namespace', 'default']);
      expect(result.code, result.stderr).toBe(9);
      expect(result.stderr).toContain('is held by someone-else');
      expect(await t.sh(`test -e ${LEAK} && echo present || echo gone`)).toContain('present');
    } finally {
      await kubectl('-n', 'default', 'delete', 'lease', `node-maint-${t.name}`, '--ignore-not-found');
    }
  });

  it('reclaim frees it (backed up first) under the node\'s Lease, and the node audits clean', async () => {
    const result = await audit(['--reclaim', '--grace', '0', '--interval', '1']);
    expect(result.code, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout);
    expect(outcome.outcomes).toContainEqual(expect.objectContaining({ verdict: 'freed', target: LEAK }));
    expect(outcome.after.findings).toEqual([]);
    expect(await t.sh(`test -e ${LEAK} && echo present || echo gone`)).toContain('gone');
    expect(await t.sh(`tr -d '\\r' < ${outcome.backupDir}${LEAK}`)).toBe(`${DEAD_ID}\neth0`);
    // It held the Lease and let it go: there, held by nobody.
    const lease = JSON.parse(await kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${t.name}`, '-o', 'json'));
    expect(lease.spec.holderIdentity ?? null).toBeNull();
  });
});
