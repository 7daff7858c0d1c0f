import { beforeAll, describe, expect, it } from 'vitest';
import { auditNode, bed, realNodeAudit, resetRealNode } from './bed.js';

describe('a clean node', () => {
  beforeAll(async () => {
    await resetRealNode();
  });

  it('audits with zero findings: the real node over SSH', async () => {
    const result = await realNodeAudit();
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.findings).toEqual([]);
    expect(report.counts.reservations).toBeGreaterThan(0);
    expect(report.ranges[0]).toMatchObject({ network: 'kubenet', usable: 125, leaked: 0 });
  });

  it.each(['fleet-1', 'fleet-2', 'fleet-3'])('audits with zero findings: %s through docker exec', async (node) => {
    const result = await auditNode([node, '--output', 'json', '--kubeconfig', bed().kubeconfig, '--container', `tb-${node}`, '--docker-host', bed().bedDockerHost]);
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.findings).toEqual([]);
    expect(report.ranges[0]).toMatchObject({ network: 'containerd-net', usable: 125 });
  });

  it('prints a readable report', async () => {
    const result = await auditNode([bed().realNode, '--kubeconfig', bed().kubeconfig, '--ssh-host', '127.0.0.1', '--ssh-port', '2222', '--ssh-user', bed().sshUser, '--ssh-key', bed().sshKey, '--known-hosts', bed().knownHosts]);
    expect(result.stdout).toMatch(/^Leak audit of node real-node: clean\n/);
    expect(result.stdout).toMatch(/range kubenet 10\.128\.\d+\.\d+\/25: usable 125, allocated \d+, in use \d+, leaked 0/);
  });
});
