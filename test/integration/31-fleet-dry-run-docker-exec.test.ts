import { beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson, runCli, waitForNoTerminatingPods } from './bed.js';
import { newStack, onFleetHost, resetFleetHosts } from './pulumi.js';

// What .github/workflows/kind-dry-run.yml does against kind, here against the bed's fleet hosts (containers too).
const HOSTS = ['fleet-1', 'fleet-2', 'fleet-3'];
const fingerprint = async () => ({
  hosts: await Promise.all(HOSTS.map((n) => onFleetHost(n, 'find /var/lib/cni /etc/cni -type f | sort | xargs md5sum; dpkg-query -W containerd; cat /run/systemd-standin/*.pid'))),
  nodes: (await kubectlJson('get', 'nodes')).items.map((n: any) => `${n.metadata.name} ${n.spec.unschedulable ?? false}`).join(','),
  // A pod the run evicted would be terminating or gone.
  pods: (await kubectlJson('get', 'pods', '-A')).items.map((p: any) => `${p.metadata.uid} ${p.metadata.deletionTimestamp ?? ''}`).sort().join(','),
  leases: await kubectl('-n', 'kube-system', 'get', 'leases', '-o', 'name'),
});

describe('the kind-style dry run through docker exec', () => {
  beforeAll(async () => {
    await resetFleetHosts();
    // Pods an earlier test deleted vanish on their own; only the run's doing may show in the comparison.
    await waitForNoTerminatingPods();
  });

  it('prints each node\'s plan and changes nothing', async () => {
    const b = bed();
    const before = await fingerprint();
    const result = await runCli('runbooks/dry-run-fleet.mjs', [...HOSTS.map((n) => `${n}=tb-${n}`), '--to', `containerd=${b.containerd.new}`, '--docker-host', b.bedDockerHost, '--kubeconfig', b.kubeconfig]);
    expect(result.code, result.stderr).toBe(0);
    for (const node of HOSTS) {
      expect(result.stdout).toContain(`Dry run (nothing changed) on node ${node}: planned`);
    }
    expect(result.stdout.match(new RegExp(`containerd: ${b.containerd.old.replace(/[.+~]/g, '\\$&')} -> ${b.containerd.new.replace(/[.+~]/g, '\\$&')} \\(planned\\)`, 'g'))).toHaveLength(3);
    expect(await fingerprint()).toEqual(before);
  });

  it('pulumi preview over docker exec shows current and target versions and changes nothing', async () => {
    const b = bed();
    const stack = await newStack('kind-dry-run');
    await stack.set('nodes', JSON.stringify(HOSTS));
    await stack.set('targets', JSON.stringify({ containerd: b.containerd.new }));
    await stack.set('kubeconfig', b.kubeconfig);
    await stack.set('dockerExec', JSON.stringify({ dockerHost: b.bedDockerHost, containers: Object.fromEntries(HOSTS.map((n) => [n, `tb-${n}`])) }));
    const before = await fingerprint();
    const preview = await stack.run(['preview', '--diff']);
    for (const node of HOSTS) expect(preview.stdout + preview.stderr).toContain(`${node}: containerd ${b.containerd.old} -> containerd ${b.containerd.new}`);
    expect(await fingerprint()).toEqual(before);
  });
});
