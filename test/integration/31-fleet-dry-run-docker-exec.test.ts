import { describe, expect, it } from 'vitest';
import { bed, runCli } from './bed.js';
import { nodeFingerprint, waitForNoTerminatingPods } from './fixtures.js';
import { useNodes } from './pool.js';
import { newStack } from './pulumi.js';

// What .github/workflows/kind-dry-run.yml does against kind, here against pool nodes (containers too).
describe('the kind-style dry run through docker exec', () => {
  const HOSTS = useNodes('containerd', 'containerd', 'docker');
  const fingerprint = async () => {
    // Pods an earlier run deleted vanish on their own; only the run's doing may show in the comparison.
    await waitForNoTerminatingPods(HOSTS.map((n) => n.name));
    return Promise.all(HOSTS.map((n) => nodeFingerprint(n)));
  };

  it('prints each node\'s plan and changes nothing', async () => {
    const b = bed();
    const before = await fingerprint();
    const result = await runCli('runbooks/dry-run-fleet.mjs', [...HOSTS.map((n) => `${n.name}=${n.container}`), '--to', `containerd=${b.containerd.new}`, '--docker-host', b.bedDockerHost, '--kubeconfig', b.kubeconfig]);
    expect(result.code, result.stderr).toBe(0);
    for (const node of HOSTS) {
      expect(result.stdout).toContain(`Dry run (nothing changed) on node ${node.name}: planned`);
    }
    expect(result.stdout.match(new RegExp(`containerd: ${b.containerd.old.replace(/[.+~]/g, '\\$&')} -> ${b.containerd.new.replace(/[.+~]/g, '\\$&')} \\(planned\\)`, 'g'))).toHaveLength(3);
    expect(await fingerprint()).toEqual(before);
  });

  it('pulumi preview over docker exec shows current and target versions and changes nothing', async () => {
    const b = bed();
    const stack = await newStack('kind-dry-run');
    await stack.set('nodes', JSON.stringify(HOSTS.map((n) => n.name)));
    await stack.set('targets', JSON.stringify({ containerd: b.containerd.new }));
    await stack.set('kubeconfig', b.kubeconfig);
    await stack.set('dockerExec', JSON.stringify({ dockerHost: b.bedDockerHost, containers: Object.fromEntries(HOSTS.map((n) => [n.name, n.container])) }));
    const before = await fingerprint();
    const preview = await stack.run(['preview', '--diff']);
    for (const node of HOSTS) expect(preview.stdout + preview.stderr).toContain(`${node.name}: containerd ${b.containerd.old} -> containerd ${b.containerd.new}`);
    expect(await fingerprint()).toEqual(before);
  });
});
