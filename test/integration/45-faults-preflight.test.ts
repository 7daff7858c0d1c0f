import { writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/cluster/api.js';
import { evictPod } from '../../src/cluster/drain/evict.js';
import type { Pod } from '../../src/cluster/types.js';
import { auditNode, bed, holdPodOnNode, kubectl, kubectlJson, releaseHeldPod, upgradeNode, waitFor } from './bed.js';
import { expectServing, fleetHost, lease, realNode, report, stepLine, upgradeArgs, upgradeKilledAt } from './faults.js';

// What preflight must find before anything changes (and again when a killed run resumes), and the checks that must
// fail closed. On a fleet host: each refusal is exit 10 (or 8, 15) with the node untouched.
const t = fleetHost('fleet-3');
const schedulable = async () => !(await kubectlJson('get', 'node', t.name)).spec.unschedulable;

function apply(objects: unknown[]): Promise<string> {
  const file = `/tmp/node-maint-preflight-${process.pid}.json`;
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  return kubectl('apply', '-f', file);
}

const pinned = (name: string, grace: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'demo' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: {
        nodeName: t.name,
        tolerations: [{ operator: 'Exists' }],
        terminationGracePeriodSeconds: grace,
        containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never' }],
      },
    },
  },
});

const runningOn = (app: string) =>
  waitFor(async () => (await kubectlJson('get', 'pods', '-n', 'demo', '-l', `app=${app}`)).items.some((p: any) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp), 120_000, `${app} running`);

describe('preflight, before anything changes', () => {
  beforeAll(async () => {
    await t.reset();
  });
  afterEach(async () => {
    await releaseHeldPod('held').catch(() => undefined);
    await kubectl('-n', 'demo', 'delete', 'deployment,pdb,pod', '-l', 'node-maint-test=preflight', '--ignore-not-found', '--wait=false');
    await kubectl('label', 'node', t.name, 'node-role.kubernetes.io/control-plane-', '--overwrite');
    await t.sh('rm -f /var/lib/cni/results/ghost-net-*; systemctl start containerd; true');
    await t.reset();
  });
  afterAll(async () => {
    await t.reset();
  });

  it('a pod whose grace period outlasts the drain timeout: refused (exit 10), the node not cordoned', async () => {
    await apply([{ ...pinned('slow-stop', 300), metadata: { name: 'slow-stop', namespace: 'demo', labels: { 'node-maint-test': 'preflight' } } }]);
    await runningOn('slow-stop');
    const args = [t.name, '--to', `containerd=${bed().containerd.new}`, '--output', 'json', '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--timeout', '60s', ...t.flags];
    const result = await upgradeNode(args);
    expect(result.code, result.stderr).toBe(10);
    expect(report(result).error.message).toMatch(/drain would time out: the grace period of demo\/slow-stop-\S+ \(grace 300s\) is not shorter than --timeout 60s/);
    expect(await schedulable()).toBe(true);
    expect((await lease(t.name)).holder).toBeUndefined();
  });

  it('PodDisruptionBudgets are checked again when a killed run resumes: a new budget that blocks rolls it back (uncordoned)', async () => {
    await apply([{ ...pinned('guarded', 5), metadata: { name: 'guarded', namespace: 'demo', labels: { 'node-maint-test': 'preflight' } } }]);
    await runningOn('guarded');
    await upgradeKilledAt(t, bed().containerd.new, stepLine('drain'));
    expect(await schedulable()).toBe(false);
    await apply([{ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'guarded', namespace: 'demo', labels: { 'node-maint-test': 'preflight' } }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'guarded' } } } }]);
    const again = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(again.code, again.stderr).toBe(11);
    const r = report(again);
    expect(r.error.code).toBe('blockedByBudget');
    expect(r.error.message).toContain('demo/guarded');
    expect(r.rollback.map((x: any) => x.step)).toEqual(['cordon']);
    await expectServing(t, bed().containerd.old);
  });

  it('a CNI cache entry that cannot be replayed is found before the drain (exit 10), not after it', async () => {
    const id = 'ab'.repeat(32);
    await t.sh(`printf '%s' '{"cniVersion":"0.4.0","ips":[{"address":"10.128.9.9/24"}]}' > /var/lib/cni/results/ghost-net-${id}-eth0`);
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(10);
    expect(report(result).error.message).toContain(`ghost-net-${id}-eth0 (result-only cache entry of network ghost-net and no config to rebuild it from)`);
    expect(result.stderr).not.toContain(stepLine('cordon'));
    expect(await schedulable()).toBe(true);
  });

  it('no crictl on the node: refused (exit 10), since the runtime network could not be checked', async () => {
    // On the real node: a fleet host's crictl is bind-mounted and cannot be moved away.
    const real = realNode();
    await real.sh('mv /usr/local/bin/crictl /usr/local/bin/crictl.off');
    try {
      const result = await upgradeNode(upgradeArgs(real, bed().containerd.new));
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toContain('has no crictl');
      expect(result.stderr).not.toContain(stepLine('cordon'));
    } finally {
      await real.sh('mv /usr/local/bin/crictl.off /usr/local/bin/crictl');
    }
  });

  it('a node without apt and dpkg (an RPM-based node): refused (exit 10), nothing changed', async () => {
    await t.sh('mv /usr/bin/apt-get /usr/bin/apt-get.off');
    try {
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toContain('only Debian and Ubuntu nodes are supported');
      expect(result.stderr).not.toContain(stepLine('cordon'));
      expect(await schedulable()).toBe(true);
    } finally {
      await t.sh('mv /usr/bin/apt-get.off /usr/bin/apt-get');
    }
  });

  it('a containerd that runs from a file no package owns (as kind runs /usr/local/bin/containerd): refused, nothing changed', async () => {
    // On the real node: a fleet host's units are bind-mounted read-only. dockerd reconnects to a restarted containerd.
    const real = realNode();
    // At the old version, so that the run has an upgrade to refuse (the real node may be upgraded by an earlier test).
    await real.reset();
    const unit = '/etc/systemd-standin/containerd.service';
    await real.sh(`systemctl stop containerd && cp /usr/bin/containerd /usr/local/bin/containerd && cp ${unit} ${unit}.orig && sed -i 's:/usr/bin/containerd:/usr/local/bin/containerd:' ${unit} && systemctl start containerd`);
    try {
      const result = await upgradeNode(upgradeArgs(real, bed().containerd.new));
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toContain('upgrading containerd would not change the running containerd: it runs /usr/local/bin/containerd, which no package owns');
      expect(result.stderr).not.toContain(stepLine('cordon'));
    } finally {
      await real.sh(`systemctl stop containerd; mv ${unit}.orig ${unit}; rm -f /usr/local/bin/containerd; systemctl start containerd`);
    }
  });

  it('a control-plane node: refused without --allow-control-plane, planned with it', async () => {
    await kubectl('label', 'node', t.name, 'node-role.kubernetes.io/control-plane=', '--overwrite');
    const refused = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(refused.code, refused.stderr).toBe(10);
    expect(report(refused).error.message).toContain('is a control-plane node (label node-role.kubernetes.io/control-plane)');
    expect(report(refused).error.message).toContain('--allow-control-plane');
    const allowed = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--allow-control-plane', '--dry-run']));
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(report(allowed).steps[0].summary).toContain('control plane (label node-role.kubernetes.io/control-plane), allowed');
  });

  it('a runtime that does not answer: the audit says it could not audit (exit 15), never clean', async () => {
    await t.sh('systemctl stop containerd');
    const result = await auditNode([t.name, '--output', 'json', ...t.flags]);
    expect(result.code, result.stderr).toBe(15);
    const audit = JSON.parse(result.stdout);
    expect(audit.verdict).toBe('unverifiable');
    expect(audit.unverifiable.join(' ')).toMatch(/runtime/);
  });

  it('a pod bound to the node after the cordon (the scheduler a moment behind): drained in a second round, the upgrade finishes', async () => {
    // A pod held by a finalizer keeps the first round waiting; once the first round has evicted it, a pod is bound
    // straight to the node, as a scheduler deciding on a cache that has not seen the cordon yet binds one.
    await holdPodOnNode('held', t.name, { 'node-maint-test': 'preflight' });
    let late: Promise<void> | undefined;
    const bindLate = async () => {
      await waitFor(async () => Boolean((await kubectlJson('get', 'pod', '-n', 'demo', 'held')).metadata.deletionTimestamp), 60_000, 'held evicted');
      await apply([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'late', namespace: 'demo', labels: { 'node-maint-test': 'preflight' } }, spec: { nodeName: t.name, containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never' }] } }]);
      await releaseHeldPod('held');
    };
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new), {
      onStderr: (text) => void (!late && text.includes(stepLine('drain')) && (late = bindLate())),
    });
    await late;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/1 pod\(s\) bound to the node after the cordon, draining them too \(round 2\): demo\/late\n/);
    expect(result.stderr).toMatch(/demo\/late gone after/);
    await expectServing(t, bed().containerd.new);
    expect(await kubectl('-n', 'demo', 'get', 'pod', 'late', '--ignore-not-found')).toBe('');
  });

  it('an eviction answered 409 for a pod replaced by a namesake counts the pod as gone, and leaves the namesake alone', async () => {
    await apply([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'namesake', namespace: 'demo', labels: { 'node-maint-test': 'preflight' } }, spec: { nodeName: t.name, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never' }] } }]);
    const first: Pod = await kubectlJson('get', 'pod', '-n', 'demo', 'namesake');
    await kubectl('-n', 'demo', 'delete', 'pod', 'namesake', '--grace-period=0', '--force');
    await apply([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'namesake', namespace: 'demo', labels: { 'node-maint-test': 'preflight' } }, spec: { nodeName: t.name, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never' }] } }]);
    const second: Pod = await kubectlJson('get', 'pod', '-n', 'demo', 'namesake');
    expect(second.metadata.uid).not.toBe(first.metadata.uid);
    const cluster = await Cluster.connect({ kubeconfig: bed().kubeconfig });
    // The API answers 409 (the UID precondition): the pod meant is gone; the namesake is not evicted.
    await evictPod(cluster, first, { gracePeriodSeconds: 0, deadline: Date.now() + 20_000, version: 'policy/v1' });
    expect((await kubectlJson('get', 'pod', '-n', 'demo', 'namesake')).metadata.uid).toBe(second.metadata.uid);
    await kubectl('-n', 'demo', 'delete', 'pod', 'namesake', '--grace-period=0', '--force');
  });
});
