import { describe, expect, it } from 'vitest';
import { applyObjects, auditNode, bed, DRAIN_FLAGS, kubectl, kubectlJson, serviceAccountKubeconfig, upgradeNode, waitFor } from './bed.js';
import { agentPods, manifest, withAgent, withoutSsh } from './agent.js';
import { containerdStatus, lease, report, stepLine, upgradeKilledAt } from './faults.js';
import { pinnedPodSpec } from './fixtures.js';
import { onLeasedNode, useNamespace, type TestNode } from './pool.js';

// No SSH (issue 37): the runbook run on the node by its agent, a DaemonSet pod, as a unit of the node's systemd,
// asked for through the API. The node's sshd is stopped (and disabled across its reboot) for every run here.

const kubeconfigOf = (t: TestNode) => t.flags[t.flags.indexOf('--kubeconfig') + 1]!;
/** The run's arguments through the agent: no SSH flag, only the caller's kubeconfig. */
const viaAgent = (t: TestNode, extra: string[]) => [t.name, '--via', 'agent', '--output', 'json', ...DRAIN_FLAGS, '--kubeconfig', kubeconfigOf(t), ...extra];

describe('the runbook through the node-maint agent, no SSH', () => {
  const ns = useNamespace();

  it.concurrent('an upgrade with --reboot end to end: the run goes on on the new boot, proven and audited clean', onLeasedNode('containerd', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const { new: version } = bed().containerd;
      const r = await upgradeNode(viaAgent(t, ['--to', `containerd=${version}`, '--reboot']));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`node-maint: asked the agent on ${t.name} to run upgrade-node ${t.name} --output json ${DRAIN_FLAGS.join(' ')} --to containerd=${version} --reboot`);
      expect(r.stderr).toContain(`node-maint agent: ${t.name} is up on a new boot: continuing the run (the same command, from its journal)`);
      const rep = report(r);
      // The report of the run's second start, on the new boot: it went on from its journal.
      expect(rep).toMatchObject({ mode: 'resume', result: 'upgraded', exitCode: 0, reboot: { after: expect.any(String) }, audit: { verdict: 'clean', findings: 0 } });
      expect(rep.steps.find((s: any) => s.name === 'prove-node')).toMatchObject({ status: 'done' });
      expect(await containerdStatus(t)).toBe(`${version} hi `);
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    }));
  }));

  it.concurrent("Ctrl-C of the caller while a budget holds the drain: passed to the run through the API, which stops at its safe point (exit 18)", onLeasedNode('docker', async (t) => {
    const app = `held-${t.name}`;
    const pod = (i: number) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `${app}-${i}`, namespace: ns.name, labels: { app } }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } });
    const budget = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: app, namespace: ns.name }, spec: { minAvailable: 1, selector: { matchLabels: { app } } } };
    await applyObjects([pod(1), pod(2), budget]);
    try {
      await withAgent(t, () => withoutSsh(t, async () => {
        let sent = 0;
        const r = await upgradeNode(viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]), {
          onStderr: (text, _kill, running) => {
            if (sent || !text.includes(stepLine('drain'))) return;
            sent = Date.now();
            setTimeout(() => running.signal('SIGINT'), 3_000);
          },
        });
        expect(r.code, r.stderr).toBe(18);
        expect(r.stderr).toContain(`node-maint: passed SIGINT to the run on ${t.name} through its agent; waiting for it to stop at its next safe point`);
        const rep = report(r);
        expect(rep).toMatchObject({ result: 'stopped', exitCode: 18 });
        expect(rep.error.message).toContain('stopped by SIGINT');
        expect((await lease(t.name)).holder).toBeUndefined();
      }));
      const back = await upgradeNode(['--rollback', t.name, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
      expect(back.code, back.stderr).toBe(11);
    } finally {
      await kubectl('-n', ns.name, 'delete', 'pdb', app, '--ignore-not-found');
    }
  }));

  it.concurrent('the caller killed and the agent\'s pod deleted during apt: the run finishes; the same command attaches and gets the report', onLeasedNode('containerd', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const { new: version } = bed().containerd;
      const args = viaAgent(t, ['--to', `containerd=${version}`]);
      const first = await upgradeNode(args, { onStderr: (text, kill) => text.includes(stepLine('upgrade-runtime')) && kill() });
      expect(first.code, first.stderr).toBe(137);
      for (const p of await agentPods(t.name)) await kubectl('-n', 'node-maint', 'delete', 'pod', p.metadata.name, '--wait=false');
      const again = await upgradeNode(args);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(new RegExp(`node-maint: (attaching to the run already under way on ${t.name} through its agent|the run this command started on ${t.name} at \\S+ ended while no caller followed it)`));
      expect(report(again)).toMatchObject({ result: 'upgraded', exitCode: 0, audit: { verdict: 'clean' } });
      expect(await containerdStatus(t)).toBe(`${version} hi `);
    }));
  }));

  it.concurrent('a run over SSH killed mid-drain, then finished through the agent (one journal, one Lease)', onLeasedNode('docker', async (t) => {
    const { new: version } = bed().containerd;
    await withAgent(t, async () => {
      await upgradeKilledAt(t, version, stepLine('stop-kubelet'));
      expect((await lease(t.name)).journal).toBeDefined();
      await withoutSsh(t, async () => {
        const r = await upgradeNode(viaAgent(t, ['--to', `containerd=${version}`]));
        expect(r.code, r.stderr).toBe(0);
        expect(report(r)).toMatchObject({ mode: 'resume', result: 'upgraded', exitCode: 0, audit: { verdict: 'clean' } });
      });
    });
  }));

  it.concurrent("audit-node through the agent: the node's own audit, run on it; --reclaim refused (it is over SSH only)", onLeasedNode('docker', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const r = await auditNode([t.name, '--via', 'agent', '--output', 'json', '--kubeconfig', kubeconfigOf(t)]);
      expect(r.code, r.stderr).toBe(0);
      expect(report(r)).toMatchObject({ node: t.name, verdict: 'clean' });
      const reclaim = await auditNode([t.name, '--via', 'agent', '--reclaim', '--output', 'json', '--kubeconfig', kubeconfigOf(t)]);
      expect(reclaim.code, reclaim.stderr).toBe(2);
      expect(JSON.parse(reclaim.stdout).error.message).toMatch(/^--reclaim does not go with --via agent yet/);
    }));
  }));

  it.concurrent("an agent that does not start the request: withdrawn after 60 s, and the agent, back, starts nothing; the node's systemd refusing the unit: said, nothing started", onLeasedNode('any', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const args = viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]);
      const exchange = async () => (await kubectlJson('get', 'configmap', '-n', 'node-maint', `node-maint-agent-${t.name}`)).data ?? {};
      // Its pod stays Ready while its process is frozen: the caller's only way to tell is that nothing starts.
      const freeze = (signal: 'STOP' | 'CONT') => t.sh(`pkill -${signal} -f dist/agent/main.js`);
      const untouched = async () => {
        expect((await t.sh("systemctl list-units --all --no-legend 'node-maint-run-*' | wc -l")).trim()).toBe('0');
        expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
        expect((await lease(t.name)).holder).toBeUndefined();
      };
      await freeze('STOP');
      let late;
      try {
        late = await upgradeNode(args);
      } finally {
        await freeze('CONT');
      }
      expect(late.code, late.stderr).toBe(10);
      expect(JSON.parse(late.stdout).error.message).toBe(`the agent on ${t.name} did not start the run within 60s (its pod running? its log says why); the request was withdrawn and nothing was changed`);
      await waitFor(async () => (await exchange()).exit === '18', 30_000, 'the agent to end the withdrawn request');
      expect((await exchange()).output).toContain('node-maint agent: a stop was asked (the caller, as no agent started the run) before the run started: nothing was started');
      await untouched();

      // The next request's unit masked on the node before the agent gets to it: systemd refuses to make it, for real.
      await freeze('STOP');
      let refused;
      try {
        const call = upgradeNode(args);
        await waitFor(async () => (await exchange()).request !== undefined && (await exchange()).exit === undefined, 30_000, 'the new request');
        const { id } = JSON.parse((await exchange()).request);
        await t.sh(`systemctl mask node-maint-run-${id}.service`);
        await freeze('CONT');
        refused = await call;
        await t.sh(`systemctl unmask node-maint-run-${id}.service`);
      } finally {
        await freeze('CONT');
      }
      expect(refused.code, refused.stderr).toBe(10);
      expect(refused.stderr).toMatch(new RegExp(`node-maint agent: could not start the run on ${t.name}: on the host: systemd-run --unit=node-maint-run-\\w+ [^]*Failed to start transient service unit: Unit node-maint-run-\\w+\\.service was already loaded or has a fragment file\\.[^]*; nothing was started`));
      await untouched();
    }));
  }));

  it.concurrent('no agent on the node, or a hook asked of it: refused by name, nothing changed', onLeasedNode('any', async (t) => {
    const hook = await upgradeNode(viaAgent(t, ['--to', `containerd=${bed().containerd.new}`, '--hook-before-drain', 'echo hi']));
    expect(hook.code, hook.stderr).toBe(2);
    expect(JSON.parse(hook.stdout).error.message).toBe('--hook-before-drain does not go with --via agent: a hook is a command, and the agent runs only the runbook (run hooks over SSH)');
    const r = await upgradeNode(viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]));
    expect(r.code, r.stderr).toBe(10);
    expect(JSON.parse(r.stdout).error.message).toContain(`${t.name} has no node-maint agent (its DaemonSet is runbooks/agent.yaml`);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    await expect(kubectl('-n', 'node-maint', 'get', 'configmap', `node-maint-agent-${t.name}`)).rejects.toThrow(/NotFound/);
  }));

  it.concurrent('two callers for one node: the second attaches to the run under way (which does not start twice); both get its report', onLeasedNode('containerd', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const args = viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]);
      let second: Promise<Awaited<ReturnType<typeof upgradeNode>>> | undefined;
      const first = await upgradeNode(args, { onStderr: (text) => void (second ??= text.includes(stepLine('drain')) ? upgradeNode(args) : undefined) });
      expect(second, first.stderr).toBeDefined();
      const other = await second!;
      expect(first.code, first.stderr).toBe(0);
      expect(other.code, other.stderr).toBe(0);
      expect(other.stderr).toContain(`node-maint: attaching to the run already under way on ${t.name} through its agent (upgrade-node ${t.name}`);
      expect(report(other).runId).toBe(report(first).runId);
    }));
  }));

  it.concurrent("the agent's image missing on the node: refused, the agent's state named, nothing written", onLeasedNode('any', async (t) => {
    const label = 'node-maint.io/agent-missing-test';
    const [daemonSet] = manifest('node-maint/agent:not-loaded', { label }).filter((d) => d.kind === 'DaemonSet');
    daemonSet.metadata.name = 'node-maint-agent-missing';
    await applyObjects([daemonSet]);
    await kubectl('label', 'node', t.name, `${label}=on`, '--overwrite');
    try {
      await waitFor(async () => (await agentPods(t.name)).some((p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImageNeverPull'), 120_000, 'the agent waiting for its image');
      const r = await upgradeNode(viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]));
      expect(r.code, r.stderr).toBe(10);
      expect(JSON.parse(r.stdout).error.message).toMatch(new RegExp(`^the node-maint agent on ${t.name} is not Ready \\(node-maint-agent-missing-\\w+: Pending, ErrImageNeverPull \\(.*node-maint/agent:not-loaded.*\\)\\); nothing was changed$`));
      await expect(kubectl('-n', 'node-maint', 'get', 'configmap', `node-maint-agent-${t.name}`)).rejects.toThrow(/NotFound/);
    } finally {
      await kubectl('label', 'node', t.name, `${label}-`);
      await kubectl('-n', 'node-maint', 'delete', 'daemonset', 'node-maint-agent-missing', '--ignore-not-found', '--wait=true');
      await waitFor(async () => (await agentPods(t.name)).length === 0, 120_000, 'the agent gone');
    }
  }));

  it.concurrent("a caller whose account may not write the request: refused, the rights named, nothing written", onLeasedNode('any', async (t) => {
    // node-maint may run the runbook, and has no right in the agent's namespace.
    const { kubeconfig } = await serviceAccountKubeconfig('kube-system', 'node-maint');
    const r = await upgradeNode([t.name, '--via', 'agent', '--output', 'json', ...DRAIN_FLAGS, '--kubeconfig', kubeconfig, '--to', `containerd=${bed().containerd.new}`]);
    expect(r.code, r.stderr).toBe(10);
    expect(JSON.parse(r.stdout).error.message).toBe("the kubeconfig's user kube-system:node-maint lacks 4 permission(s) the run through the agent needs: get configmaps in node-maint, create configmaps in node-maint, update configmaps in node-maint, patch configmaps in node-maint; nothing was changed. runbooks/rbac.yaml grants what the run needs; the request needs get, create, update and patch of ConfigMaps in node-maint (the agent's namespace)");
    await expect(kubectl('-n', 'node-maint', 'get', 'configmap', `node-maint-agent-${t.name}`)).rejects.toThrow(/NotFound/);
  }));
});
