import { describe, expect, it } from 'vitest';
import { applyObjects, auditNode, bed, DRAIN_FLAGS, kubectl, kubectlJson, serviceAccountKubeconfig, upgradeNode, waitFor } from './bed.js';
import { AGENT_TEST_LABEL, agentPods, manifest, requesterKubeconfig, withAgent, withoutSsh } from './agent.js';
import { clearFault, containerdStatus, FAULTS_DIR, lease, report, setFault, stepLine, upgradeKilledAt } from './faults.js';
import { bootOf, pinnedPodSpec } from './fixtures.js';
import { onLeasedNode, useNamespace, type TestNode } from './pool.js';

// No SSH (issue 37): the runbook run on the node by its agent, a DaemonSet pod, as a unit of the node's systemd,
// asked for through the API (a MaintenanceRun) by a caller that holds only the shipped requester's rights. The
// node's sshd is stopped (and disabled across its reboot) for every run here but the one finished over SSH.

/** The run's arguments through the agent: no SSH flag, only the requester's kubeconfig. */
const viaAgent = async (t: TestNode, extra: string[]) => [t.name, '--via', 'agent', '--output', 'json', ...DRAIN_FLAGS, '--kubeconfig', await requesterKubeconfig(), ...extra];
const maintenanceRun = async (t: TestNode) => kubectlJson('get', 'maintenancerun', t.name).catch(() => undefined);

describe('the runbook through the node-maint agent, no SSH', () => {
  const ns = useNamespace();

  it.concurrent('an upgrade with --reboot end to end: the run goes on on the new boot, proven and audited clean', onLeasedNode('containerd', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const { new: version } = bed().containerd;
      const r = await upgradeNode(await viaAgent(t, ['--to', `containerd=${version}`, '--reboot']));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`node-maint: asked the agent on ${t.name} for: upgrade containerd=${version}, reboot always (MaintenanceRun ${t.name}); its output follows`);
      expect(r.stderr).toMatch(new RegExp(`node-maint agent: ${t.name} is up on a new boot, and its journal says run [\\w-]+ is unfinished \\(running\\): continuing it`));
      // The shutdown its own reboot brings is said as that, never as a stop (issue 43 item 4), and the agent's word on
      // the new boot comes after what the run printed up to its reboot.
      expect(r.stderr).toContain('SIGTERM received: the node is shutting down for the reboot this run asked: the run goes on from its journal');
      expect(r.stderr).not.toMatch(/send it again to end at once|gave up waiting for/);
      expect(r.stderr.indexOf(`rebooting ${t.name}: `)).toBeGreaterThan(-1);
      expect(r.stderr.indexOf('is up on a new boot')).toBeGreaterThan(r.stderr.indexOf(`rebooting ${t.name}: `));
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
        const r = await upgradeNode(await viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]), {
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

  it.concurrent('a stop that lands between the unit\'s start and its record (the record refused for a while): the run is stopped through its unit, exit 18, its state said', onLeasedNode('docker', async (t) => {
    // The test's own set-up (as cluster-admin): the agent's write of Running refused for this node, as an API that
    // fails just then, so that the stop lands in that gap for sure; a budget holds the drain, so the run is at a
    // safe point with kubelet running when the stop reaches it.
    const hold = `node-maint-test-hold-running-${t.name}`;
    const policy = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: hold }, spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: ['node-maint.io'], apiVersions: ['*'], resources: ['maintenanceruns/status'], operations: ['UPDATE'] }] },
      matchConditions: [{ name: 'this-node', expression: `request.name == '${t.name}'` }],
      validations: [{ expression: "!has(object.status.phase) || object.status.phase != 'Running'", message: 'held by the test' }],
    } };
    const binding = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: hold }, spec: { policyName: hold, validationActions: ['Deny'] } };
    const app = `held-start-${t.name}`;
    const pod = (i: number) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `${app}-${i}`, namespace: ns.name, labels: { app } }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } });
    const budget = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: app, namespace: ns.name }, spec: { minAvailable: 1, selector: { matchLabels: { app } } } };
    await applyObjects([pod(1), pod(2), budget, policy, binding]);
    try {
      await withAgent(t, () => withoutSsh(t, async () => {
        let sent = false;
        const r = await upgradeNode(await viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]), {
          onStderr: () => {
            if (sent) return;
            sent = true;
            void (async () => {
              await waitFor(async () => (await t.sh("systemctl list-units --no-legend 'node-maint-run-*' | wc -l")).trim() === '1', 60_000, 'the unit to start');
              expect((await maintenanceRun(t)).status.phase).toBe('Starting');
              await kubectl('patch', 'maintenancerun', t.name, '--type=merge', '-p', '{"spec":{"stop":{"reason":"SIGINT"}}}');
              await kubectl('delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', hold);
            })();
          },
        });
        expect(r.code, r.stderr).toBe(18);
        expect(r.stderr).toMatch(/node-maint agent: the run's unit node-maint-run-\w+ is on \S+ already: following it/);
        expect(report(r)).toMatchObject({ result: 'stopped', exitCode: 18 });
        expect(report(r).error.message).toContain('stopped by SIGINT');
        expect((await lease(t.name)).holder).toBeUndefined();
      }));
      const back = await upgradeNode(['--rollback', t.name, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
      expect([0, 11], back.stderr).toContain(back.code);
    } finally {
      await kubectl('delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', hold, '--ignore-not-found');
      await kubectl('-n', ns.name, 'delete', 'pdb', app, '--ignore-not-found');
    }
  }));

  it.concurrent('a run stopped while apt installs (its unit signalled on the node; the agent, away with kubelet stopped, back once kubelet is started by hand): the install finishes and only then is the unit removed; the same command stops kubelet again and finishes', onLeasedNode('containerd', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      // The unpack held 30 s (the bed's package hook), so that the stop lands while dpkg works.
      const version = bed().containerd.faulty;
      await setFault(t, 'preinst-slow');
      await clearFault(t, 'preinst-started');
      const args = await viaAgent(t, ['--to', `containerd=${version}`]);
      const call = upgradeNode(args);
      await waitFor(async () => (await t.sh(`test -e ${FAULTS_DIR}/preinst-started && echo yes || true`)).trim() === 'yes', 300_000, 'the unpack');
      const unit = `node-maint-run-${(await maintenanceRun(t)).metadata.uid.replace(/-/g, '').slice(0, 12)}`;
      // On the node, every 0.3 s while dpkg works: whether the run's unit is gone.
      const watch = t.sh(`while pgrep -x dpkg >/dev/null || pgrep -x apt-get >/dev/null; do [ "$(systemctl list-units --all --no-legend '${unit}*' | wc -l)" = 0 ] && echo removed-under-dpkg; sleep 0.3; done; echo done`);
      await t.sh(`systemctl kill --kill-who=main --signal=SIGINT ${unit}.service`);
      let state = '';
      await waitFor(async () => ['exited', 'failed'].includes((state = (await t.sh(`systemctl show -p SubState --value ${unit}.service; tail -n 3 /var/lib/node-maint/agent/runs/*.log; pgrep -ax "dpkg|apt-get" || true`)).trim()).split('\n')[0]!), 300_000, 'the run to stop at its safe point').catch((e: Error) => {
        throw new Error(`${e.message} (${unit}: ${state})`);
      });
      await t.sh('systemctl start kubelet');
      const r = await call;
      expect(r.code, r.stderr).toBe(18);
      expect(report(r).error.message).toMatch(/goes on on the node until it ends/);
      expect(await watch).toBe('done\n');
      await waitFor(async () => (await maintenanceRun(t)).status.unitRemoved === true, 60_000, 'the unit removed once dpkg ended');
      // The install went to its end, not killed halfway (that leaves the package half installed: dpkg --audit says so).
      expect((await t.sh('dpkg --audit; echo $?')).trim()).toBe('0');
      expect((await containerdStatus(t)).split(' ')[0]).toBe(version);
      await clearFault(t, 'preinst-slow');
      const again = await upgradeNode(args);
      expect(again.code, again.stderr).toBe(0);
      expect(report(again)).toMatchObject({ mode: 'resume', result: 'upgraded', undone: { why: 'kubelet', redone: ['stop-kubelet', 'teardown-sandboxes', 'clear-state'] }, audit: { verdict: 'clean' } });
      expect(await containerdStatus(t)).toBe(`${version} hi `);
    }));
  }));

  it.concurrent('a run the agent started, whose node rebooted, finished over SSH meanwhile: the agent, back on the new boot, does not start it again', onLeasedNode('containerd', async (t) => {
    await withAgent(t, async () => {
      const { new: version } = bed().containerd;
      const before = await bootOf(t);
      let away: Promise<void> | undefined;
      // The agent kept off the node for its reboot: its label taken off as the reboot step starts, its pod removed.
      const keepAway = async () => {
        await kubectl('label', 'node', t.name, `${AGENT_TEST_LABEL}-`);
        await kubectl('-n', 'node-maint', 'delete', 'pod', '-l', 'app.kubernetes.io/name=node-maint-agent', '--field-selector', `spec.nodeName=${t.name}`, '--force', '--grace-period=0');
      };
      const call = upgradeNode(await viaAgent(t, ['--to', `containerd=${version}`, '--reboot']));
      // The journal says the reboot is next before the run asks it (the agent publishes what the run printed later).
      await waitFor(async () => (await lease(t.name)).journal?.reboot !== undefined, 300_000, 'the run to come to its reboot');
      away = keepAway();
      await waitFor(async () => (await bootOf(t).catch(() => before)) !== before, 600_000, 'the node on a new boot');
      await away;
      await waitFor(async () => (await agentPods(t.name)).length === 0 && (await kubectlJson('get', 'node', t.name)).status.conditions.some((c: any) => c.type === 'Ready' && c.status === 'True'), 180_000, 'the node Ready, with no agent');
      const ssh = await upgradeNode([t.name, '--to', `containerd=${version}`, '--reboot', '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
      expect(ssh.code, ssh.stderr).toBe(0);
      const finished = (await lease(t.name)).journal;
      expect(finished.status).toBe('completed');
      const boot = await bootOf(t);
      await kubectl('label', 'node', t.name, `${AGENT_TEST_LABEL}=on`);
      const r = await call;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`node-maint agent: ${t.name} is up on a new boot, and its journal says run ${finished.runId} is completed`);
      expect(r.stderr).toContain('the run is over, not started again');
      // Nothing more: no second unit, no new run, no new reboot, the node serving.
      expect((await t.sh("systemctl list-units --all --no-legend 'node-maint-run-*' | wc -l")).trim()).toBe('0');
      expect((await lease(t.name)).journal).toMatchObject({ runId: finished.runId, status: 'completed', updatedAt: finished.updatedAt });
      expect(await bootOf(t)).toBe(boot);
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    });
  }));

  it.concurrent('the caller killed and the agent\'s pod deleted during apt: the run finishes; the same command attaches and gets the report', onLeasedNode('containerd', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const { new: version } = bed().containerd;
      const args = await viaAgent(t, ['--to', `containerd=${version}`]);
      const first = await upgradeNode(args, { onStderr: (text, kill) => text.includes(stepLine('upgrade-runtime')) && kill() });
      expect(first.code, first.stderr).toBe(137);
      for (const p of await agentPods(t.name)) await kubectl('-n', 'node-maint', 'delete', 'pod', p.metadata.name, '--wait=false');
      const again = await upgradeNode(args);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(new RegExp(`node-maint: (attaching to the run already under way on ${t.name} through its agent|the run asked on ${t.name} at \\S+ ended while no caller followed it)`));
      expect(report(again)).toMatchObject({ result: 'upgraded', exitCode: 0, audit: { verdict: 'clean' } });
      expect(await containerdStatus(t)).toBe(`${version} hi `);
    }));
  }));

  it.concurrent('a run over SSH killed as it stops kubelet, then rolled back through the agent (one journal, one Lease)', onLeasedNode('docker', async (t) => {
    const { old, new: version } = bed().containerd;
    await withAgent(t, async () => {
      await upgradeKilledAt(t, version, stepLine('stop-kubelet'));
      expect((await lease(t.name)).journal).toBeDefined();
      await withoutSsh(t, async () => {
        // Nothing installed yet: the agent's run undoes the SSH run's steps from the journal they share.
        const r = await upgradeNode(await viaAgent(t, ['--to', `containerd=${version}`, '--rollback']));
        expect(r.code, r.stderr).toBe(11);
        expect(report(r)).toMatchObject({ mode: 'rollback', result: 'rolled-back', exitCode: 11 });
      });
      expect((await lease(t.name)).holder).toBeUndefined();
      expect(await containerdStatus(t)).toBe(`${old} hi `);
      expect((await t.sh('systemctl is-active kubelet || true')).trim()).toBe('active');
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    });
  }));

  it.concurrent("audit-node through the agent: the node's own audit, run on it, its MaintenanceRun Succeeded", onLeasedNode('docker', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const r = await auditNode([t.name, '--via', 'agent', '--output', 'json', '--kubeconfig', await requesterKubeconfig()]);
      expect(r.code, r.stderr).toBe(0);
      expect(report(r)).toMatchObject({ node: t.name, verdict: 'clean' });
      expect(await maintenanceRun(t)).toMatchObject({ spec: { command: 'audit' }, status: { phase: 'Succeeded', exitCode: 0 } });
    }));
  }));

  it.concurrent("an agent that does not start the request: withdrawn after 60 s, and the agent, back, starts nothing; the node's systemd refusing the unit: said, nothing started", onLeasedNode('any', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const args = await viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]);
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
      expect(JSON.parse(late.stdout).error.message).toBe(`the agent on ${t.name} did not start the run within 60s (its pod running? its log says why); the request was withdrawn, so no agent will start it, and nothing was changed`);
      await waitFor(async () => (await maintenanceRun(t))?.status?.phase === 'Stopped', 30_000, 'the agent to end the withdrawn request');
      expect((await maintenanceRun(t)).status).toMatchObject({ exitCode: 18, message: 'the request was withdrawn (withdrawn by its caller: no agent claimed it) before any agent started it: nothing was started' });
      await untouched();
      const withdrawn = (await maintenanceRun(t)).metadata.uid;

      // The next run's unit masked on the node before the agent gets to it (its name is the MaintenanceRun's UID's):
      // systemd refuses to make it, for real.
      await freeze('STOP');
      let refused;
      let unit = '';
      try {
        const call = upgradeNode(args);
        // The new request itself: between the withdrawn one's deletion and its creation there is none.
        let request: any;
        await waitFor(async () => {
          request = await maintenanceRun(t);
          return request !== undefined && request.metadata.uid !== withdrawn && request.status === undefined;
        }, 30_000, 'the new request');
        unit = `node-maint-run-${request.metadata.uid.replace(/-/g, '').slice(0, 12)}`;
        await t.sh(`systemctl mask ${unit}.service`);
        await freeze('CONT');
        refused = await call;
      } finally {
        await freeze('CONT');
        if (unit) await t.sh(`systemctl unmask ${unit}.service`);
      }
      expect(refused.code, refused.stderr).toBe(10);
      expect(refused.stderr).toMatch(new RegExp(`node-maint agent: could not start the run on ${t.name}: on the host: /usr/bin/systemd-run --unit=${unit} [^]*Failed to start transient service unit: Unit ${unit}\\.service was already loaded or has a fragment file\\.[^]*; nothing was started`));
      await untouched();
    }));
  }));

  it.concurrent('no agent on the node, or a hook asked of it: refused by name, nothing changed', onLeasedNode('any', async (t) => {
    const hook = await upgradeNode(await viaAgent(t, ['--to', `containerd=${bed().containerd.new}`, '--hook-before-drain', 'echo hi']));
    expect(hook.code, hook.stderr).toBe(2);
    expect(JSON.parse(hook.stdout).error.message).toBe('--hook-before-drain does not go with --via agent: a hook is a command, and the agent runs only the runbook (run hooks over SSH)');
    const r = await upgradeNode(await viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]));
    expect(r.code, r.stderr).toBe(10);
    expect(JSON.parse(r.stdout).error.message).toContain(`${t.name} has no node-maint agent (its DaemonSet is runbooks/agent/; pods labelled app.kubernetes.io/name=node-maint-agent in node-maint)`);
    expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
    await expect(kubectl('get', 'maintenancerun', t.name)).rejects.toThrow(/NotFound/);
  }));

  it.concurrent('two callers for one node: the second attaches to the run under way (which does not start twice); both get its report', onLeasedNode('containerd', async (t) => {
    await withAgent(t, () => withoutSsh(t, async () => {
      const args = await viaAgent(t, ['--to', `containerd=${bed().containerd.faulty}`]);
      // The install held 30 s (the +nmtest1 package's preinst waits): the run is still under way when the second
      // caller, started at the drain, comes to ask, however slow its start on a busy machine.
      await setFault(t, 'preinst-slow');
      let second: Promise<Awaited<ReturnType<typeof upgradeNode>>> | undefined;
      const first = await upgradeNode(args, { onStderr: (text) => void (second ??= text.includes(stepLine('drain')) ? upgradeNode(args) : undefined) });
      expect(second, first.stderr).toBeDefined();
      const other = await second!;
      expect(first.code, first.stderr).toBe(0);
      expect(other.code, other.stderr).toBe(0);
      expect(other.stderr).toContain(`node-maint: attaching to the run already under way on ${t.name} through its agent (upgrade containerd=${bed().containerd.faulty}, asked by system:serviceaccount:default:node-maint-test-requester at `);
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
      const r = await upgradeNode(await viaAgent(t, ['--to', `containerd=${bed().containerd.new}`]));
      expect(r.code, r.stderr).toBe(10);
      expect(JSON.parse(r.stdout).error.message).toMatch(new RegExp(`^the node-maint agent on ${t.name} is not Ready \\(node-maint-agent-missing-\\w+: Pending, ErrImageNeverPull \\(.*node-maint/agent:not-loaded.*\\)\\); nothing was changed$`));
      await expect(kubectl('get', 'maintenancerun', t.name)).rejects.toThrow(/NotFound/);
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
    expect(JSON.parse(r.stdout).error.message).toBe("the kubeconfig's user kube-system:node-maint lacks 4 permission(s) the run through the agent needs: get maintenanceruns.node-maint.io, create maintenanceruns.node-maint.io, patch maintenanceruns.node-maint.io, delete maintenanceruns.node-maint.io; nothing was changed. runbooks/agent/requester.yaml has the rights to bind: maintenanceruns get, create, patch and delete, get nodes, and list pods in node-maint");
    await expect(kubectl('get', 'maintenancerun', t.name)).rejects.toThrow(/NotFound/);
  }));
});
