import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, kubectl, kubectlJson, nodeMaintEvents, upgradeNode, waitFor, watchNodeLabel } from './bed.js';
import { FAULTS_DIR } from './faults.js';
import { pinnedDeployment, sandboxIds } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';
import { containerdOn } from './pulumi.js';

describe('upgrade-node on a docker node (cri-dockerd, kubenet)', () => {
  const [t] = useNodes('docker');
  const ns = useNamespace();
  beforeAll(async () => {
    await pinnedDeployment(ns.name, 'api', t.name, 2);
    await pinnedDeployment(ns.name, 'cache', t.name, 1);
  });

  it('takes the node from Ready and schedulable back to Ready and schedulable on the new containerd, zero leaks', async () => {
    const b = bed();
    const podsBefore = await kubectlJson('get', 'pods', '-n', ns.name, '--field-selector', `spec.nodeName=${t.name}`);
    const movable = podsBefore.items.filter((p: any) => p.metadata.ownerReferences?.[0]?.kind === 'ReplicaSet');
    expect(movable.length).toBe(3);
    // kubelet slow to start (`systemctl start` returns at once, as for Type=simple): until it posts, the node shows the
    // Ready it posted before the stop. The CI sequence (that stale Ready beside a ready runtime network) is unit-tested
    // in test/unit/runbook/kubelet-ready.test.ts.
    await t.sh(`mkdir -p ${FAULTS_DIR} && echo 8 > ${FAULTS_DIR}/kubelet-start-delay`);

    const states = watchNodeLabel(t.name, 'node-maint.io/state');
    // Hooks: two on the node (over SSH), one on this machine; each appends what it was told, after the time, to a log
    // of its machine (one clock: the node is a container here).
    const hookLog = '/run/node-maint-test-hooks.log';
    const localLog = join(mkdtempSync(join(tmpdir(), 'node-maint-hooks-')), 'hooks.log');
    const hook = (label: string, log: string) => `echo "$(date +%s%N) ${label} $NODE_MAINT_HOOK $NODE_MAINT_NODE $NODE_MAINT_FROM $NODE_MAINT_TO $NODE_MAINT_RUN_ID" >> ${log}`;
    const hooks = ['--hook-before-drain', hook('node', hookLog), '--hook-after-upgrade', `local:${hook('local', localLog)}`, '--hook-after-uncordon', hook('node', hookLog)];
    const result = await upgradeNode([t.name, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...hooks, ...t.flags]);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.result).toBe('upgraded');
    const versions = `${t.name} containerd=${b.containerd.old} containerd=${b.containerd.new} ${report.runId}`;
    const logged = `${await t.sh(`cat ${hookLog}`)}${readFileSync(localLog, 'utf8')}`.trim().split('\n').sort();
    expect(logged.map((l) => l.replace(/^\d+ /, ''))).toEqual([`node before-drain ${versions}`, `local after-upgrade ${versions}`, `node after-uncordon ${versions}`]);
    // Where operators look: the state label through the run, the run's annotations, its Events on the Node.
    // The last value is written just before the run exits: its watch event may still be on its way.
    await waitFor(async () => states.seen().includes('done'), 15_000, 'the state label done').catch(() => undefined);
    expect(states.stop()).toEqual(expect.arrayContaining(['draining', 'upgrading', 'verifying', 'done']));
    expect(await kubectl('get', 'node', t.name, '-L', 'node-maint.io/state')).toMatch(/\sdone\s*$/m);
    const marked = await kubectlJson('get', 'node', t.name);
    expect(marked.metadata.annotations).toMatchObject({ 'node-maint.io/run-id': report.runId, 'node-maint.io/from': `containerd=${b.containerd.old}`, 'node-maint.io/to': `containerd=${b.containerd.new}` });
    const events = await nodeMaintEvents(t.name, report.runId);
    expect(events.map((e) => e.split(':')[0])).toEqual(['MaintenanceStarted', 'Drained', 'RuntimeUpgraded', 'MaintenanceDone']);
    expect(await kubectl('describe', 'node', t.name)).toContain('MaintenanceDone');
    expect(report.versions).toMatchObject({ before: { containerd: b.containerd.old }, after: { containerd: b.containerd.new } });
    expect(report.audit.findings).toBe(0);
    expect(report.backups[0]).toMatch(/^\/var\/lib\/node-maint\/backups\/.+\.tgz$/);
    // That stale Ready was seen and was no answer: start-kubelet waited for one the started kubelet posted.
    expect(result.stderr).toContain('(posted before kubelet started)');
    expect(report.steps.find((s: any) => s.name === 'start-kubelet').durationMs).toBeGreaterThan(8000);
    await t.sh(`rm -f ${FAULTS_DIR}/kubelet-start-delay`);

    expect(await containerdOn(t)).toBe(b.containerd.new);
    const node = await kubectlJson('get', 'node', t.name);
    expect(node.spec.unschedulable).toBeUndefined();
    expect(node.status.conditions.find((c: any) => c.type === 'Ready').status).toBe('True');
    expect(node.spec.podCIDR).toMatch(/\/25$/);
    // The evicted pods were replaced: each ReplicaSet is back at its size (its pods pinned to the node waited for the
    // uncordon, so they may still be starting when the run ends).
    for (const pod of movable) {
      const name = pod.metadata.ownerReferences[0].name;
      await waitFor(async () => {
        const rs = await kubectlJson('get', 'rs', '-n', ns.name, name);
        return rs.status.readyReplicas === rs.spec.replicas;
      }, 120_000, `ReplicaSet ${name} ready again`);
    }
    // Every host-local reservation belongs to a live sandbox; nothing left from the old runtime.
    const files = (await t.sh('ls /var/lib/cni/networks/kubenet')).split('\n').filter((f) => /^\d+\./.test(f));
    const sandboxes = await sandboxIds(t);
    for (const f of files) {
      const owner = (await t.sh(`head -n1 /var/lib/cni/networks/kubenet/${f} | tr -d '\\r'`)).trim();
      expect(sandboxes).toContain(owner);
    }
    // What clear-state removed is in the backup on the node.
    const cleared: string[] = report.steps.find((s: any) => s.name === 'clear-state').detail.files;
    const listed = await t.sh(`tar -tzf ${report.backups[0]}`);
    for (const file of cleared) expect(listed).toContain(file.slice(1));
  });

  it('a second run plans nothing', async () => {
    const b = bed();
    const result = await upgradeNode([t.name, '--to', `containerd=${b.containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.result).toBe('nothing-to-do');
    for (const step of report.steps) expect(step.actions, step.name).toEqual([]);
    expect(report.audit.findings).toBe(0);
  });
});

describe('npm run demo (testbed/demo), as a newcomer runs it, twice on one node', () => {
  const [t] = useNodes('docker');
  it('moves containerd up, then back down, each run named for what it did, and says where its time went', async () => {
    const demo = () => promisify(execFile)('bash', ['testbed/demo'], { env: { ...process.env, NODE_MAINT_DEMO_NODE: t.name }, maxBuffer: 64 * 2 ** 20, timeout: 900_000 });
    const { old, new: next } = bed().containerd;
    // The suite's other files read the bed's kubeconfig and env.json while the demo's testbed/up writes them again:
    // never seen emptied or cut (a truncating write once failed a fleet's gate with "cannot load the kubeconfig").
    const files = [bed().kubeconfig, join(dirname(bed().kubeconfig), 'env.json')];
    const whole = files.map((f) => readFileSync(f, 'utf8'));
    let reads = 0;
    const torn = new Set<string>();
    const reader = setInterval(() => {
      for (const [i, f] of files.entries()) {
        reads++;
        const text = readFileSync(f, 'utf8');
        if (text.length < whole[i]!.length / 2) torn.add(`${f}: ${text.length} of ${whole[i]!.length} bytes`);
      }
    }, 1);
    const up = await demo().finally(() => clearInterval(reader));
    expect([...torn], `${reads} reads`).toEqual([]);
    expect(up.stdout).toContain(`demo: containerd ${old} -> ${next} on ${t.name}`);
    expect(up.stdout).toMatch(new RegExp(`Run on node ${t.name}: upgraded \\(exit 0\\)`));
    expect(up.stderr).toMatch(/demo: exit 0 in \d+s: npm \d+s, the bed \d+s \(testbed\/up --demo; its split above\), the runbook \d+s\. The bed keeps running: bash testbed\/down stops it/);
    expect(up.stderr).toMatch(/up in \d+s: Debian packages \d+s, local apt repository \d+s, build etcd \d+s/);
    const down = await demo();
    expect(down.stdout).toContain(`demo: containerd ${next} -> ${old} on ${t.name}`);
    expect(down.stdout).toMatch(new RegExp(`Run on node ${t.name}: downgraded \\(exit 0\\)`));
    expect(down.stdout).toContain(`  containerd: ${next} -> ${old}`);
  });
});

