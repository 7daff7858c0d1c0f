import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson, waitFor } from './bed.js';
import { AGENT_TEST_LABEL, bedCluster, BED_API_ENV, BED_POLICY, loadAgentImage, removeAgent, withAgent, withoutSsh } from './agent.js';
import { bootOf } from './fixtures.js';
import { useNodes, type TestNode } from './pool.js';
import { configureBedFleet, containerdOn, newStack, type PulumiStack } from './pulumi.js';

// A fleet with `access: agent` (issue 37): preview reads what each node's agent published, up runs each node through
// its agent as a MaintenanceRun (kubectl get shows them as they go); no SSH key in the stack, and every node's sshd
// stopped (and disabled) for the whole of it.
const FLEET = useNodes('any', 'any');

describe('pulumi with access: agent', () => {
  let stack: PulumiStack;

  beforeAll(async () => {
    stack = await newStack('fleet-agent');
    await configureBedFleet(stack, FLEET.map((t) => t.name), 1);
    await stack.set('access', 'agent');
    stack.unset('ssh', 'sshKey');
  });

  it("preview plans from the agents' facts and up upgrades the two through them, with no SSH anywhere", async () => {
    await withAgent(FLEET, () => withoutSsh(FLEET, async () => {
      const { old, new: version } = bed().containerd;
      for (const t of FLEET) await waitFor(async () => (await kubectlJson('get', 'configmap', '-n', 'node-maint', `node-maint-facts-${t.name}`)).data?.facts !== undefined, 60_000, `${t.name}'s facts`);
      const preview = (await stack.run(['preview'])).stdout;
      for (const t of FLEET) expect(preview).toContain(`${t.name}: containerd ${old} -> containerd ${version}`);
      const upAt = Date.now();
      // What an operator watching the fleet sees: `kubectl get maintenanceruns -w` while up runs (each change, its age cut).
      const rows = new Set<string>();
      const b = bed();
      const watcher = spawn(b.kubectl, ['--kubeconfig', b.kubeconfig, 'get', 'maintenanceruns', '-w']);
      let buffer = '';
      watcher.stdout.on('data', (d: Buffer) => {
        const lines = (buffer + d.toString()).split('\n');
        buffer = lines.pop()!;
        for (const line of lines) rows.add(line.replace(/\s+/g, ' ').replace(/ \S+$/, ''));
      });
      const succeeded = (t: (typeof FLEET)[number]) => [...rows].some((r) => r.startsWith(`${t.name} ${t.name} upgrade Succeeded`));
      try {
        await stack.run(['up', '--yes', '--skip-preview']);
        // The last run's last change may still be on its way to the watch when up ends: waited for, not for time.
        await waitFor(async () => FLEET.every(succeeded), 30_000, 'every run Succeeded in the watch').catch(() => undefined);
      } finally {
        watcher.kill();
      }
      expect(rows).toContain('NAME NODE COMMAND PHASE STEP EXIT');
      for (const t of FLEET) {
        expect([...rows].some((r) => new RegExp(`^${t.name} ${t.name} upgrade Running \\d+/12 `).test(r)), [...rows].join('\n')).toBe(true);
        expect([...rows], [...rows].join('\n')).toContain(`${t.name} ${t.name} upgrade Succeeded 12/12 Verify nothing leaked 0`);
      }
      const outputs = stack.outputs();
      for (const t of FLEET) {
        expect(outputs.nodes[t.name]).toMatchObject({ result: 'upgraded', audit: { findings: 0 } });
        expect(await containerdOn(t)).toBe(version);
      }
      // Each agent publishes its node's facts again once its run ended, with that run's audit (its textfile's time, in
      // seconds): the next preview says it.
      const lastAudit = async (t: (typeof FLEET)[number]) => JSON.parse((await kubectlJson('get', 'configmap', '-n', 'node-maint', `node-maint-facts-${t.name}`)).data.facts).lastAudit;
      for (const t of FLEET) await waitFor(async () => Date.parse((await lastAudit(t))?.at ?? '') >= upAt - 1000, 60_000, `${t.name}'s facts with its last audit`);

      // A sentinel that appears after the agents' last read is not in their facts (issue 43 item 4): preview says that
      // up looks again, and up has each node's run look: the node with it reboots, the others find nothing to do.
      const [late, ...others] = FLEET as [TestNode, ...TestNode[]];
      await stack.set('reboot', 'if-required');
      await late.sh('touch /var/run/reboot-required');
      const boots = await Promise.all(FLEET.map(bootOf));
      const after = (await stack.run(['preview'])).stdout;
      for (const t of FLEET) expect(after).toContain(`${t.name}: containerd ${version} -> containerd ${version}; no reboot required when its agent last read the node: \`pulumi up\` has its run look again (its preflight decides); last audit: clean (${(await lastAudit(t)).at})`);
      // The age of what the plan rests on (issue 43 item 4): a change since the agent's last read is not seen.
      for (const t of FLEET) expect(after).toMatch(new RegExp(`${t.name}: .*; facts \\d+ min old \\(written [0-9T:.Z-]+; its agent reads the node every 5 min`));
      expect(after).toContain('the last audits their agents ran: 2 clean, 0 with findings, 0 could not verify, 0 none yet');
      const again = await stack.run(['up', '--yes', '--skip-preview']);
      for (const t of others) expect(again.stdout).toContain(`[${t.name}] nothing to do: its run read the node and found it at its targets, no reboot required`);
      const ran = stack.outputs().nodes;
      expect(ran[late.name]).toMatchObject({ result: 'rebooted', audit: { findings: 0 } });
      for (const t of others) expect(ran[t.name].result).toBe('nothing-to-do');
      expect(await bootOf(late)).not.toBe(boots[0]);
      for (const [i, t] of others.entries()) expect(await bootOf(t)).toBe(boots[i + 1]);
      stack.unset('reboot');
    }));
  });

  it('a node without an agent: preview names it and changes nothing', async () => {
    const result = await stack.run(['preview'], { allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain(`cannot observe 2 of 2 node(s), so no node is planned or changed: ${FLEET[0]!.name} (no facts from a node-maint agent on it (access: agent; its DaemonSet is runbooks/agent/))`);
  });

  it('the stack makes the agent itself (agent in its config): preview names the nodes not observed yet and changes nothing; up makes it, waits for its facts, plans from them', async () => {
    const names = FLEET.map((t) => t.name);
    const image = await loadAgentImage(names);
    // The objects runbooks/rbac.yaml gives (or createRbac): the runbook's account the agent's runs act as.
    await kubectl('apply', '-f', 'runbooks/rbac.yaml');
    // As the bed's own tests make it (test/integration/agent.ts), so that a test beside this one sees the same DaemonSet.
    await stack.set('agent', JSON.stringify({ image, imagePullPolicy: 'Never', nodeSelector: { [AGENT_TEST_LABEL]: 'on' }, env: BED_API_ENV, policy: BED_POLICY }));
    try {
      await withoutSsh(FLEET, async () => {
        const preview = (await stack.run(['preview'])).stdout;
        for (const t of FLEET) expect(preview).toContain(`${t.name}: not observed yet: this stack makes its agent (agent.image ${image}); \`pulumi up\` waits for its facts`);
        for (const t of FLEET) await expect(kubectl('-n', 'node-maint', 'get', 'configmap', `node-maint-facts-${t.name}`)).rejects.toThrow(/NotFound/);
        for (const t of FLEET) await kubectl('label', 'node', t.name, `${AGENT_TEST_LABEL}=on`, '--overwrite');
        const up = await stack.run(['up', '--yes', '--skip-preview']);
        // Planned from the facts of the agents it made (the wait for them is said only when none had published yet).
        for (const t of FLEET) expect(up.stdout).toContain(`${t.name}: containerd ${bed().containerd.new} -> containerd ${bed().containerd.new}; last audit:`);
        const managers = JSON.parse(await kubectl('get', 'daemonset', '-n', 'node-maint', 'node-maint-agent', '-o', 'json', '--show-managed-fields')).metadata.managedFields.map((f: any) => f.manager);
        expect(managers.some((m: string) => m.startsWith('pulumi'))).toBe(true);
      });
    } finally {
      await removeAgent(bedCluster(FLEET), names);
    }
  });
});
