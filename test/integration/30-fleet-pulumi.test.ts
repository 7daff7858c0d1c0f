import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson, realNodeFingerprint, resetRealNode } from './bed.js';
import { configureBedFleet, FLEET, fleetContainerd, newStack, onFleetHost, resetFleetHosts, type PulumiStack } from './pulumi.js';

/** Watches the nodes and remembers the most that were cordoned at once. */
function watchCordons(): { stop: () => number } {
  const b = bed();
  const child = spawn(b.kubectl, ['--kubeconfig', b.kubeconfig, 'get', 'nodes', '-w', '--no-headers', '-o', 'custom-columns=N:.metadata.name,U:.spec.unschedulable']);
  const cordoned = new Map<string, boolean>();
  let most = 0;
  let buffer = '';
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) {
      const [name, unschedulable] = line.trim().split(/\s+/);
      if (name && FLEET.includes(name)) cordoned.set(name, unschedulable === 'true');
    }
    most = Math.max(most, [...cordoned.values()].filter(Boolean).length);
  });
  return { stop: () => (child.kill(), most) };
}

const fingerprintFleet = async () => ({
  real: await realNodeFingerprint(),
  hosts: await Promise.all(['fleet-1', 'fleet-2', 'fleet-3'].map((n) => onFleetHost(n, "find /var/lib/cni /etc/cni -type f | sort | xargs md5sum; dpkg-query -W containerd; cat /run/systemd-standin/*.pid"))),
  nodes: (await kubectlJson('get', 'nodes')).items.map((n: any) => `${n.metadata.name} ${n.spec.unschedulable ?? false}`).join(','),
  leases: await kubectl('-n', 'kube-system', 'get', 'leases', '-o', 'name'),
});

describe('pulumi up: fleet-wide runtime upgrades', () => {
  let stack: PulumiStack;

  beforeAll(async () => {
    await resetRealNode();
    await resetFleetHosts();
    stack = await newStack('fleet');
    await configureBedFleet(stack, FLEET, 2);
  });

  afterAll(async () => {
    await resetFleetHosts();
  });

  it('pulumi preview shows each node\'s current and target versions and changes nothing', async () => {
    const before = await fingerprintFleet();
    const preview = await stack.run(['preview', '--diff']);
    // The program's per-node lines are diagnostics (stderr with --diff); the plan itself is on stdout.
    for (const node of FLEET) expect(preview.stdout + preview.stderr).toContain(`${node}: containerd ${bed().containerd.old} -> containerd ${bed().containerd.new}`);
    expect(preview.stdout).toMatch(/\+ 5 to create/);
    expect(await fingerprintFleet()).toEqual(before);
  });

  it('upgrades the real node and three fleet hosts with maxUnavailable 2, never more than 2 cordoned, zero leaks', async () => {
    const watch = watchCordons();
    const up = await stack.run(['up', '--yes', '--skip-preview']);
    const most = watch.stop();
    expect(most).toBe(2);
    for (const node of FLEET) expect(await fleetContainerd(node)).toBe(bed().containerd.new);
    const outputs = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout);
    expect(outputs.waves).toEqual([['fleet-1', 'fleet-2'], ['real-node', 'fleet-3']]);
    for (const node of FLEET) {
      expect(outputs.nodes[node]).toMatchObject({ result: 'upgraded', versionsBefore: { containerd: bed().containerd.old }, versionsAfter: { containerd: bed().containerd.new }, audit: { findings: 0 } });
    }
    for (const node of (await kubectlJson('get', 'nodes')).items.filter((n: any) => FLEET.includes(n.metadata.name))) expect(node.spec.unschedulable).toBeUndefined();
    // Orchestration overhead: wall time against the nodes' own runs (each wave lasts as long as its slowest node).
    const ms = (n: string) => outputs.nodes[n].durationMs as number;
    const criticalPath = outputs.waves.reduce((sum: number, wave: string[]) => sum + Math.max(...wave.map(ms)), 0);
    const sum = FLEET.reduce((s, n) => s + ms(n), 0);
    console.log(`pulumi up: wall ${up.ms} ms; nodes' own runs: sum ${sum} ms, critical path ${criticalPath} ms; overhead over the critical path ${up.ms - criticalPath} ms`);
    expect(stack.stateText()).not.toContain('PRIVATE KEY');
    expect(up.stdout + up.stderr).not.toContain('PRIVATE KEY');
  });

  it('a second pulumi up reports no changes', async () => {
    const again = await stack.run(['up', '--yes', '--skip-preview']);
    expect(again.stdout).toMatch(/5 unchanged/);
  });
});

describe('pulumi up with one node made to fail', () => {
  let stack: PulumiStack;
  const hook = `/etc/apt/apt.conf.d/99node-maint-test-fail`;

  beforeAll(async () => {
    await resetRealNode();
    await resetFleetHosts();
    stack = await newStack('failing');
    await configureBedFleet(stack, FLEET, 2);
    // fleet-1 refuses the new containerd in dpkg: its upgrade fails for real, and rolls back.
    const pattern = `containerd_${bed().containerd.new.replace(/[~+]/g, '.')}`;
    await onFleetHost('fleet-1', `echo 'DPkg::Pre-Install-Pkgs {"if grep -q ${pattern}; then echo test: refusing >&2; exit 1; fi";};' > ${hook}`);
  });

  afterAll(async () => {
    await onFleetHost('fleet-1', `rm -f ${hook}`);
    await resetFleetHosts();
  });

  it('rolls the failed node back and leaves the nodes after it untouched; fixed, pulumi up finishes the fleet', async () => {
    const failed = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(failed.code).not.toBe(0);
    expect(failed.stdout).toMatch(/fleet-1: rolled-back \(exit 11\)/);
    expect(await fleetContainerd('fleet-1')).toBe(bed().containerd.old);
    const nodes = (await kubectlJson('get', 'nodes')).items;
    expect(nodes.find((n: any) => n.metadata.name === 'fleet-1').spec.unschedulable).toBeUndefined();
    // The second wave never started: no Lease, no journal, old containerd.
    for (const node of ['real-node', 'fleet-3']) {
      expect(await fleetContainerd(node)).toBe(bed().containerd.old);
      expect(await kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${node}`, '--ignore-not-found')).toBe('');
    }

    await onFleetHost('fleet-1', `rm -f ${hook}`);
    const fixed = await stack.run(['up', '--yes', '--skip-preview']);
    expect(fixed.stdout).toMatch(/Resources:/);
    for (const node of FLEET) expect(await fleetContainerd(node)).toBe(bed().containerd.new);
    const outputs = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout);
    for (const node of FLEET) expect(outputs.nodes[node].audit.findings).toBe(0);
  });
});

describe('pulumi preview with a bad fleet config', () => {
  it('an SSH key set without --secret is refused before any node is touched, naming the fix and never the key', async () => {
    const stack = await newStack('plainkey');
    await configureBedFleet(stack, ['fleet-1'], 1);
    const key = readFileSync(bed().sshKey, 'utf8');
    await stack.run(['config', 'rm', '--config-file', stack.configFile, 'node-maint:sshKey']);
    await stack.set('sshKey', key, false);
    const preview = await stack.run(['preview'], { allowFailure: true });
    expect(preview.code).not.toBe(0);
    expect(preview.stdout + preview.stderr).toContain('config node-maint:sshKey: is in the stack file in plain text, not a secret; run `pulumi config rm node-maint:sshKey`');
    expect(preview.stdout + preview.stderr).not.toContain(key.split('\n')[1]!);
    expect(await kubectl('-n', 'kube-system', 'get', 'lease', 'node-maint-fleet-1', '--ignore-not-found')).toBe('');
  });

  it('a control-plane node in the fleet is refused unless allowControlPlane is set', async () => {
    const stack = await newStack('controlplane');
    await configureBedFleet(stack, ['fleet-1', 'fleet-2'], 2);
    await kubectl('label', 'node', 'fleet-2', 'node-role.kubernetes.io/control-plane=', '--overwrite');
    try {
      const refused = await stack.run(['preview'], { allowFailure: true });
      expect(refused.code).not.toBe(0);
      expect(refused.stdout + refused.stderr).toContain('config node-maint:allowControlPlane: the fleet includes control-plane nodes (fleet-2: label node-role.kubernetes.io/control-plane)');
      await stack.set('allowControlPlane', 'true');
      const allowed = await stack.run(['preview']);
      expect(allowed.code).toBe(0);
      expect(allowed.stdout).toMatch(/\+ 3 to create/);
    } finally {
      await kubectl('label', 'node', 'fleet-2', 'node-role.kubernetes.io/control-plane-');
    }
  });
});
