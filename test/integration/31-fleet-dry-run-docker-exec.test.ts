import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, runCli } from './bed.js';
import { nodeFingerprint, waitForNoTerminatingPods } from './fixtures.js';
import { useNodes } from './pool.js';
import { newStack, type PulumiStack } from './pulumi.js';
import { webhookReceiver } from './webhook.js';

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

  // Tried as an operator would: a stack that once ran, then a docker host, a container name or a key gone wrong.
  // Preview and up must fail, name each node and why, change nothing; the webhook hears that the fleet failed.
  describe('a fleet that cannot see its nodes', () => {
    const NODES = HOSTS.slice(0, 2);  // the file's two containerd nodes, after the cases above
    let stack: PulumiStack;
    let hook: Awaited<ReturnType<typeof webhookReceiver>>;
    const containers = () => Object.fromEntries(NODES.map((n) => [n.name, n.container]));

    beforeAll(async () => {
      const b = bed();
      hook = await webhookReceiver();
      stack = await newStack('unobserved');
      await stack.set('nodes', JSON.stringify(NODES.map((n) => n.name)));
      await stack.set('order', 'as-listed');
      await stack.set('kubeconfig', b.kubeconfig);
      await stack.set('webhook', hook.url, true);
      await stack.set('dockerExec', JSON.stringify({ dockerHost: b.bedDockerHost, containers: containers() }));
      // Targets the nodes already have: the first up runs each node's runbook (nothing to do), and the state says done.
      await stack.set('targets', JSON.stringify({ containerd: b.containerd.old }));
      await stack.run(['up', '--yes', '--skip-preview']);
      await stack.set('targets', JSON.stringify({ containerd: b.containerd.new }));
    });

    afterAll(() => hook.server.close());

    it.each([
      ['a docker host that does not answer', () => ({ dockerHost: 'unix:///run/node-maint-test-nope.sock', containers: containers() }), (n: { container: string }) => `docker exec ${n.container}: Cannot connect to the Docker daemon at unix:///run/node-maint-test-nope.sock`],
      ['a container name with a typo', () => ({ dockerHost: bed().bedDockerHost, containers: Object.fromEntries(NODES.map((n) => [n.name, `${n.container}-typo`])) }), (n: { container: string }) => `docker exec ${n.container}-typo: Error response from daemon: No such container: ${n.container}-typo`],
    ])('%s: preview and up fail naming every node and why, nothing changes, the webhook hears the failure', async (_what, dockerExec, reason) => {
      hook.messages.length = 0;
      await stack.set('dockerExec', JSON.stringify(dockerExec()));
      const before = await Promise.all(NODES.map((n) => nodeFingerprint(n)));
      for (const command of [['preview'], ['up', '--yes', '--skip-preview']]) {
        const result = await stack.run(command, { allowFailure: true });
        const output = result.stdout + result.stderr;
        expect(result.code, output).not.toBe(0);
        expect(output).toContain('cannot observe 2 of 2 node(s), so no node is planned or changed');
        for (const n of NODES) expect(output).toContain(`${n.name} (${reason(n)}`);
        expect(output).not.toMatch(/NodeRuntimeUpgrade.*(updating|creating)/);
      }
      expect(await Promise.all(NODES.map((n) => nodeFingerprint(n)))).toEqual(before);
      // The preview tells nobody; the up says the fleet failed before any node, and never that one was upgraded.
      expect(hook.messages.map((m) => m.event)).toEqual(['fleet-failed']);
      expect(hook.messages[0]!.text).toContain('failed before any node changed: cannot observe 2 of 2 node(s)');
    });

    it('a node over SSH with no key set is named with the fix', async () => {
      await stack.set('dockerExec', JSON.stringify({ dockerHost: bed().bedDockerHost, containers: { [NODES[0]!.name]: NODES[0]!.container } }));
      const preview = await stack.run(['preview'], { allowFailure: true });
      expect(preview.code).not.toBe(0);
      expect(preview.stdout + preview.stderr).toContain(`cannot observe 1 of 2 node(s)`);
      expect(preview.stdout + preview.stderr).toMatch(new RegExp(`${NODES[1]!.name} \\(no SSH key given for root@[^)]+\\); no SSH key is set: \`pulumi config set --secret node-maint:sshKey < KEY\`, or list the nodes in dockerExec.containers`));
    });
  });
});
