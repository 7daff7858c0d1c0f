import { describe, expect, it } from 'vitest';
import { auditNode, bed } from './bed.js';
import { nodeAudit } from './fixtures.js';
import { useNodes } from './pool.js';

describe('a clean node', () => {
  const [docker, containerd] = useNodes('docker', 'containerd');

  it('audits with zero findings: a docker node over SSH', async () => {
    const result = await nodeAudit(docker);
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.findings).toEqual([]);
    expect(report.counts.reservations).toBeGreaterThan(0);
    expect(report.ranges[0]).toMatchObject({ network: 'kubenet', usable: 125, leaked: 0 });
  });

  it('audits with zero findings: a containerd node through docker exec', async () => {
    const result = await auditNode([containerd.name, '--output', 'json', ...containerd.dockerExecFlags]);
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.findings).toEqual([]);
    expect(report.ranges[0]).toMatchObject({ network: 'containerd-net', usable: 125 });
  });

  it('prints a readable report', async () => {
    const b = bed();
    const result = await auditNode([docker.name, '--kubeconfig', b.kubeconfig, '--ssh-host', '127.0.0.1', '--ssh-port', String(docker.sshPort), '--ssh-user', b.sshUser, '--ssh-key', b.sshKey, '--known-hosts', b.knownHosts]);
    expect(result.stdout).toMatch(new RegExp(`^Leak audit of node ${docker.name}: clean\\n`));
    expect(result.stdout).toMatch(/range kubenet 10\.\d+\.\d+\.\d+\/25: usable 125, allocated \d+, in use \d+, leaked 0/);
  });
});
