import { beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectlJson, waitFor } from './bed.js';
import { withAgent, withoutSsh } from './agent.js';
import { useNodes } from './pool.js';
import { configureBedFleet, containerdOn, newStack, type PulumiStack } from './pulumi.js';

// A fleet with `access: agent` (issue 37): preview reads what each node's agent published, up runs each node through
// its agent; no SSH key in the stack, and every node's sshd stopped (and disabled) for the whole of it.
const FLEET = useNodes('any', 'any', 'any');

describe('pulumi with access: agent', () => {
  let stack: PulumiStack;

  beforeAll(async () => {
    stack = await newStack('fleet-agent');
    await configureBedFleet(stack, FLEET.map((t) => t.name), 1);
    await stack.set('access', 'agent');
    for (const key of ['ssh', 'sshKey']) await stack.run(['config', 'rm', `node-maint:${key}`, '--config-file', stack.configFile]);
  });

  it("preview plans from the agents' facts and up upgrades the three through them, with no SSH anywhere", async () => {
    await withAgent(FLEET, () => withoutSsh(FLEET, async () => {
      const { old, new: version } = bed().containerd;
      for (const t of FLEET) await waitFor(async () => (await kubectlJson('get', 'configmap', '-n', 'node-maint', `node-maint-facts-${t.name}`)).data?.facts !== undefined, 60_000, `${t.name}'s facts`);
      const preview = (await stack.run(['preview'])).stdout;
      for (const t of FLEET) expect(preview).toContain(`${t.name}: containerd ${old} -> containerd ${version}`);
      const upAt = Date.now();
      await stack.run(['up', '--yes', '--skip-preview']);
      const outputs = JSON.parse((await stack.run(['stack', 'output', '--json'])).stdout);
      for (const t of FLEET) {
        expect(outputs.nodes[t.name]).toMatchObject({ result: 'upgraded', audit: { findings: 0 } });
        expect(await containerdOn(t)).toBe(version);
      }
      // Each agent publishes its node's facts again once its run ended, with that run's audit (its textfile's time, in
      // seconds): the next preview says it.
      const lastAudit = async (t: (typeof FLEET)[number]) => JSON.parse((await kubectlJson('get', 'configmap', '-n', 'node-maint', `node-maint-facts-${t.name}`)).data.facts).lastAudit;
      for (const t of FLEET) await waitFor(async () => Date.parse((await lastAudit(t))?.at ?? '') >= upAt - 1000, 60_000, `${t.name}'s facts with its last audit`);
      const after = (await stack.run(['preview'])).stdout;
      for (const t of FLEET) expect(after).toContain(`${t.name}: containerd ${version} -> containerd ${version}; last audit: clean (${(await lastAudit(t)).at})`);
      expect(after).toContain('the last audits their agents ran: 3 clean, 0 with findings, 0 could not verify, 0 none yet');
    }));
  });

  it('a node without an agent: preview names it and changes nothing', async () => {
    const result = await stack.run(['preview'], { allowFailure: true });
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain(`cannot observe 3 of 3 node(s), so no node is planned or changed: ${FLEET[0]!.name} (no facts from a node-maint agent on it (access: agent; its DaemonSet is runbooks/agent.yaml))`);
  });
});
