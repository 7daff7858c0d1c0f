import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson } from './bed.js';
import { nodeFingerprint } from './fixtures.js';
import { useNodes, type TestNode } from './pool.js';
import { configureBedFleet, containerdOn, newStack, type PulumiStack } from './pulumi.js';

// A fleet of four: two containerd nodes and two docker nodes, in that order of waves.
const FLEET = useNodes('containerd', 'docker', 'containerd', 'docker');
const names = () => FLEET.map((n) => n.name);

/** Watches the nodes and remembers the most that were cordoned at once. */
function watchCordons(fleet: string[]): { stop: () => number } {
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
      if (name && fleet.includes(name)) cordoned.set(name, unschedulable === 'true');
    }
    most = Math.max(most, [...cordoned.values()].filter(Boolean).length);
  });
  return { stop: () => (child.kill(), most) };
}

const fingerprintFleet = async () => Promise.all(FLEET.map((n: TestNode) => nodeFingerprint(n)));

describe('pulumi up: fleet-wide runtime upgrades', () => {
  let stack: PulumiStack;

  beforeAll(async () => {
    stack = await newStack('fleet');
    await configureBedFleet(stack, names(), 2);
  });

  it('pulumi preview shows each node\'s current and target versions and changes nothing', async () => {
    const before = await fingerprintFleet();
    const preview = await stack.run(['preview', '--diff']);
    // The program's per-node lines are diagnostics (stderr with --diff); the plan itself is on stdout.
    for (const node of names()) expect(preview.stdout + preview.stderr).toContain(`${node}: containerd ${bed().containerd.old} -> containerd ${bed().containerd.new}`);
    expect(preview.stdout).toMatch(/\+ 5 to create/);
    expect(await fingerprintFleet()).toEqual(before);
  });

  it('upgrades two containerd and two docker nodes with maxUnavailable 2, never more than 2 cordoned, zero leaks', async () => {
    const watch = watchCordons(names());
    const up = await stack.run(['up', '--yes', '--skip-preview']);
    const most = watch.stop();
    expect(most).toBe(2);
    for (const node of FLEET) expect(await containerdOn(node)).toBe(bed().containerd.new);
    // Read as the README does; the other files read the outputs from the stack's state (no CLI start).
    const outputs = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout);
    const [c1, d1, c2, d2] = names();
    expect(outputs.waves).toEqual([[c1, d1], [c2, d2]]);
    for (const node of names()) {
      expect(outputs.nodes[node]).toMatchObject({ result: 'upgraded', versionsBefore: { containerd: bed().containerd.old }, versionsAfter: { containerd: bed().containerd.new }, audit: { findings: 0 } });
    }
    for (const node of (await kubectlJson('get', 'nodes')).items.filter((n: any) => names().includes(n.metadata.name))) expect(node.spec.unschedulable).toBeUndefined();
    // Orchestration overhead: wall time against the nodes' own runs (each wave lasts as long as its slowest node).
    const ms = (n: string) => outputs.nodes[n].durationMs as number;
    const criticalPath = outputs.waves.reduce((sum: number, wave: string[]) => sum + Math.max(...wave.map(ms)), 0);
    const sum = names().reduce((s, n) => s + ms(n), 0);
    console.log(`pulumi up: wall ${up.ms} ms; nodes' own runs: sum ${sum} ms, critical path ${criticalPath} ms; overhead over the critical path ${up.ms - criticalPath} ms`);
    expect(stack.stateText()).not.toContain('PRIVATE KEY');
    expect(up.stdout + up.stderr).not.toContain('PRIVATE KEY');
  });

  it('a second pulumi up reports no changes, in resources or outputs, though the planned order changed meanwhile', async () => {
    // The waves output says where the nodes ran, not a plan that moves with pod counts or the order.
    await stack.set('order', JSON.stringify([names()[3]]));
    const again = await stack.run(['up', '--yes', '--skip-preview']);
    expect(again.stdout).toMatch(/5 unchanged/);
    expect(again.stdout).not.toMatch(/~\s+waves/);
    await stack.set('order', 'as-listed');
  });

  it('a failed pulumi up leaves the stack outputs of the last up that finished', async () => {
    const before = stack.outputs();
    // Back to the old version, but the first node's before-drain hook fails: it rolls back, the up fails.
    await stack.set('targets', JSON.stringify({ containerd: bed().containerd.old }));
    await stack.set('hooks', JSON.stringify({ beforeDrain: 'exit 3' }));
    try {
      const failed = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
      expect(failed.code).not.toBe(0);
      expect(failed.stdout).toMatch(new RegExp(`${names()[0]}: rolled-back \\(exit 11\\)`));
      expect(JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout)).toEqual(before);
    } finally {
      await stack.set('targets', JSON.stringify({ containerd: bed().containerd.new }));
      stack.unset('hooks');
    }
  });
});

describe('pulumi up with one node made to fail', () => {
  let stack: PulumiStack;
  const hook = `/etc/apt/apt.conf.d/99node-maint-test-fail`;

  // The fleet is at the new containerd (the ups above): this up takes it back to the old one, which also leaves the
  // nodes as the next file's reset wants them (no reset here, none there: each would reinstall the old containerd).
  beforeAll(async () => {
    for (const node of FLEET) expect(await containerdOn(node)).toBe(bed().containerd.new);
    // The Leases of the runs above (their journals) go, as a reset removes them: "no Lease" below means this up's.
    await kubectl('-n', 'kube-system', 'delete', 'lease', ...names().map((n) => `node-maint-${n}`), '--ignore-not-found');
    stack = await newStack('failing');
    await configureBedFleet(stack, names(), 2);
    await stack.set('targets', JSON.stringify({ containerd: bed().containerd.old }));
    // The first node refuses the old containerd in dpkg: its change fails for real, and rolls back to the new one.
    const pattern = `containerd_${bed().containerd.old.replace(/[~+]/g, '.')}`;
    await FLEET[0]!.sh(`echo 'DPkg::Pre-Install-Pkgs {"if grep -q ${pattern}; then echo test: refusing >&2; exit 1; fi";};' > ${hook}`);
  });

  afterAll(async () => {
    await FLEET[0]!.sh(`rm -f ${hook}`);
  });

  it('rolls the failed node back and leaves the nodes after it untouched; fixed, pulumi up finishes the fleet', async () => {
    const [first, , third, fourth] = FLEET as [TestNode, TestNode, TestNode, TestNode];
    const failed = await stack.run(['up', '--yes', '--skip-preview'], { allowFailure: true });
    expect(failed.code).not.toBe(0);
    expect(failed.stdout).toMatch(new RegExp(`${first.name}: rolled-back \\(exit 11\\)`));
    expect(await containerdOn(first)).toBe(bed().containerd.new);
    expect((await kubectlJson('get', 'node', first.name)).spec.unschedulable).toBeUndefined();
    // The second wave never started: no Lease, no journal, its containerd as it was.
    for (const node of [third, fourth]) {
      expect(await containerdOn(node)).toBe(bed().containerd.new);
      expect(await kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${node.name}`, '--ignore-not-found')).toBe('');
    }

    await first.sh(`rm -f ${hook}`);
    const fixed = await stack.run(['up', '--yes', '--skip-preview']);
    expect(fixed.stdout).toMatch(/Resources:/);
    for (const node of FLEET) expect(await containerdOn(node)).toBe(bed().containerd.old);
    const outputs = stack.outputs();
    for (const node of names()) expect(outputs.nodes[node].audit.findings).toBe(0);
  });
});

describe('pulumi preview with a bad fleet config', () => {
  it('an SSH key set without --secret is refused before any node is touched, naming the fix and never the key', async () => {
    const stack = await newStack('plainkey');
    await configureBedFleet(stack, [names()[0]!], 1);
    const leaseOf = () => kubectl('-n', 'kube-system', 'get', 'lease', `node-maint-${names()[0]}`, '--ignore-not-found', '-o', 'jsonpath={.metadata.resourceVersion}');
    const leaseBefore = await leaseOf();
    const key = readFileSync(bed().sshKey, 'utf8');
    stack.unset('sshKey');
    await stack.set('sshKey', key, false);
    const preview = await stack.run(['preview'], { allowFailure: true });
    expect(preview.code).not.toBe(0);
    expect(preview.stdout + preview.stderr).toContain('config node-maint:sshKey: is in the stack file in plain text, not a secret; run `pulumi config rm node-maint:sshKey`');
    expect(preview.stdout + preview.stderr).not.toContain(key.split('\n')[1]!);
    // A config error of its own, not a crash: no "unhandled exception", no stack.
    expect(preview.stdout + preview.stderr).not.toContain('failed with an unhandled exception');
    expect(preview.stdout + preview.stderr).not.toMatch(/at \S+ \(.*\.js:\d+:\d+\)/);
    expect(await leaseOf()).toBe(leaseBefore);
  });

  it('a target version no node\'s sources offer fails preview, naming each node and what it is offered', async () => {
    const stack = await newStack('nosuchversion');
    const [first] = names() as [string];
    await configureBedFleet(stack, [first], 1);
    await stack.set('targets', JSON.stringify({ containerd: '1.6.99~ds1-1' }));
    const preview = await stack.run(['preview'], { allowFailure: true });
    const said = preview.stdout + preview.stderr;
    expect(preview.code).not.toBe(0);
    expect(said).toContain(`config node-maint:targets: not installable on 1 node(s), so no node is planned or changed: ${first}: containerd 1.6.99~ds1-1 is not offered by its package sources (they offer: `);
    expect(said).toContain(bed().containerd.new);
    expect(said).not.toContain('failed with an unhandled exception');
  });

  it('a control-plane node in the fleet is refused unless allowControlPlane is set', async () => {
    const stack = await newStack('controlplane');
    const [first, second] = names() as [string, string];
    await configureBedFleet(stack, [first, second], 2);
    await kubectl('label', 'node', second, 'node-role.kubernetes.io/control-plane=', '--overwrite');
    try {
      const refused = await stack.run(['preview'], { allowFailure: true });
      expect(refused.code).not.toBe(0);
      expect(refused.stdout + refused.stderr).toContain(`config node-maint:allowControlPlane: the fleet includes control-plane nodes (${second}: label node-role.kubernetes.io/control-plane)`);
      await stack.set('allowControlPlane', 'true');
      const allowed = await stack.run(['preview']);
      expect(allowed.code).toBe(0);
      expect(allowed.stdout).toMatch(/\+ 3 to create/);
    } finally {
      await kubectl('label', 'node', second, 'node-role.kubernetes.io/control-plane-');
    }
  });
});
