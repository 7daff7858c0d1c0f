import { beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, FAULTS_DIR, installedContainerd, kubectl, kubectlJson, nodeMaintEvents, resetRealNode, sh, sshFlags, upgradeNode, waitFor, watchNodeLabel } from './bed.js';

describe('upgrade-node on the real node', () => {
  beforeAll(async () => {
    await resetRealNode();
  });

  it('takes the node from Ready and schedulable back to Ready and schedulable on the new containerd, zero leaks', async () => {
    const b = bed();
    const podsBefore = await kubectlJson('get', 'pods', '-n', 'demo', '--field-selector', `spec.nodeName=${b.realNode}`);
    const movable = podsBefore.items.filter((p: any) => p.metadata.ownerReferences?.[0]?.kind === 'ReplicaSet');
    expect(movable.length).toBeGreaterThan(0);
    // kubelet slow to start (`systemctl start` returns at once, as for Type=simple): until it posts, the node shows the
    // Ready it posted before the stop. The CI sequence (that stale Ready beside a ready runtime network) is unit-tested
    // in test/unit/runbook/kubelet-ready.test.ts.
    await sh(`mkdir -p ${FAULTS_DIR} && echo 8 > ${FAULTS_DIR}/kubelet-start-delay`);

    const states = watchNodeLabel(b.realNode, 'node-maint.io/state');
    // Hooks: two on the node (over SSH), one on this machine; each appends what it was told to one log.
    const hookLog = '/run/node-maint-test-hooks.log';
    await sh(`rm -f ${hookLog}`);
    const hook = (label: string) => `echo "${label} $NODE_MAINT_HOOK $NODE_MAINT_NODE $NODE_MAINT_FROM $NODE_MAINT_TO $NODE_MAINT_RUN_ID" >> ${hookLog}`;
    const hooks = ['--hook-before-drain', hook('node'), '--hook-after-upgrade', `local:${hook('local')}`, '--hook-after-uncordon', hook('node')];
    const result = await upgradeNode([b.realNode, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...hooks, ...sshFlags(b.realNode)]);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.result).toBe('upgraded');
    const versions = `real-node containerd=${b.containerd.old} containerd=${b.containerd.new} ${report.runId}`;
    expect((await sh(`cat ${hookLog}`)).trim().split('\n')).toEqual([`node before-drain ${versions}`, `local after-upgrade ${versions}`, `node after-uncordon ${versions}`]);
    // Where operators look: the state label through the run, the run's annotations, its Events on the Node.
    // The last value is written just before the run exits: its watch event may still be on its way.
    await waitFor(async () => states.seen().includes('done'), 15_000, 'the state label done').catch(() => undefined);
    expect(states.stop()).toEqual(expect.arrayContaining(['draining', 'upgrading', 'verifying', 'done']));
    expect(await kubectl('get', 'node', b.realNode, '-L', 'node-maint.io/state')).toMatch(/\sdone\s*$/m);
    const marked = await kubectlJson('get', 'node', b.realNode);
    expect(marked.metadata.annotations).toMatchObject({ 'node-maint.io/run-id': report.runId, 'node-maint.io/from': `containerd=${b.containerd.old}`, 'node-maint.io/to': `containerd=${b.containerd.new}` });
    const events = await nodeMaintEvents(b.realNode, report.runId);
    expect(events.map((e) => e.split(':')[0])).toEqual(['MaintenanceStarted', 'Drained', 'RuntimeUpgraded', 'MaintenanceDone']);
    expect(await kubectl('describe', 'node', b.realNode)).toContain('MaintenanceDone');
    expect(report.versions).toMatchObject({ before: { containerd: b.containerd.old }, after: { containerd: b.containerd.new } });
    expect(report.audit.findings).toBe(0);
    expect(report.backups[0]).toMatch(/^\/var\/lib\/node-maint\/backups\/.+\.tgz$/);
    // That stale Ready was seen and was no answer: start-kubelet waited for one the started kubelet posted.
    expect(result.stderr).toContain('(posted before kubelet started)');
    expect(report.steps.find((s: any) => s.name === 'start-kubelet').durationMs).toBeGreaterThan(8000);
    await sh(`rm -f ${FAULTS_DIR}/kubelet-start-delay`);

    expect(await installedContainerd()).toBe(b.containerd.new);
    const node = await kubectlJson('get', 'node', b.realNode);
    expect(node.spec.unschedulable).toBeUndefined();
    expect(node.status.conditions.find((c: any) => c.type === 'Ready').status).toBe('True');
    expect(node.spec.podCIDR).toMatch(/\/25$/);
    // The evicted pods were rescheduled: each ReplicaSet is back at its size, elsewhere (replacements start after the
    // eviction, so they may still be starting when the run ends).
    for (const pod of movable) {
      const name = pod.metadata.ownerReferences[0].name;
      await waitFor(async () => {
        const rs = await kubectlJson('get', 'rs', '-n', 'demo', name);
        return rs.status.readyReplicas === rs.spec.replicas;
      }, 120_000, `ReplicaSet ${name} ready again`);
    }
    // Every host-local reservation belongs to a live sandbox; nothing left from the old runtime.
    const files = (await sh('ls /var/lib/cni/networks/kubenet')).split('\n').filter((f) => /^\d+\./.test(f));
    const sandboxes = await sh('docker ps -q --no-trunc --filter label=io.kubernetes.docker.type=podsandbox');
    for (const f of files) {
      const owner = (await sh(`head -n1 /var/lib/cni/networks/kubenet/${f}`)).trim();
      expect(sandboxes).toContain(owner);
    }
    // What clear-state removed is in the backup on the node.
    const cleared: string[] = report.steps.find((s: any) => s.name === 'clear-state').detail.files;
    const listed = await sh(`tar -tzf ${report.backups[0]}`);
    for (const file of cleared) expect(listed).toContain(file.slice(1));
  });

  it('a second run plans nothing', async () => {
    const b = bed();
    const result = await upgradeNode([b.realNode, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...sshFlags(b.realNode)]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.result).toBe('nothing-to-do');
    for (const step of report.steps) expect(step.actions, step.name).toEqual([]);
    expect(report.audit.findings).toBe(0);
  });
});
