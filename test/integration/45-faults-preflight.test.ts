import { describe, expect, it } from 'vitest';
import { Cluster } from '../../src/cluster/api.js';
import { evictPod } from '../../src/cluster/drain/evict.js';
import type { Pod } from '../../src/cluster/types.js';
import { applyObjects as apply, auditNode, bed, kubectl, kubectlJson, upgradeNode, waitFor } from './bed.js';
import { apiFilter } from './api-filter.js';
import { expectServing, lease, report, stepLine, upgradeArgs, upgradeKilledAt, withKubeconfig, type Target } from './faults.js';
import { holdPodOnNode, pinnedPodSpec, releaseHeldPod } from './fixtures.js';
import { onLeasedNode, useNamespace } from './pool.js';

// What preflight must find before anything changes (and again when a killed run resumes), and the checks that must
// fail closed. On containerd nodes: each refusal is exit 10 (or 8, 15) with the node untouched. Each case on a node of
// its own, leased for the case, from a reset node and with pods of its own (label node-maint-test=NODE).
const ns = useNamespace();
const onNode = (fn: (t: Target) => Promise<void>) =>
  onLeasedNode('containerd', async (t) => {
    try {
      await fn(t);
    } finally {
      await releaseHeldPod(ns.name, `held-${t.name}`).catch(() => undefined);
      await kubectl('-n', ns.name, 'delete', 'deployment,pdb,pod', '-l', `node-maint-test=${t.name}`, '--ignore-not-found', '--wait=false');
    }
  });
const schedulable = async (t: Target) => !(await kubectlJson('get', 'node', t.name)).spec.unschedulable;

/** An upgrade with `file` written on the node (removed after): refused in preflight (exit 10) before the cordon, the
 * node schedulable; the refusal's message. */
async function refusedWithFile(t: Target, file: string, content: string, kubeconfig?: string): Promise<string> {
  await t.sh(`printf '%s' '${content}' > ${file}`);
  const args = upgradeArgs(t, bed().containerd.new);
  const result = await upgradeNode(kubeconfig ? withKubeconfig(args, kubeconfig) : args).finally(() => t.sh(`rm -f ${file}`));
  expect(result.code, result.stderr).toBe(10);
  expect(result.stderr).not.toContain(stepLine('cordon'));
  expect(await schedulable(t)).toBe(true);
  return report(result).error.message;
}

/** A Deployment of one pod on the node (its hostname label); `extra` goes into its pod template. */
const pinned = (t: Target, name: string, grace: number, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: ns.name, labels: { 'node-maint-test': t.name } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: pinnedPodSpec(t.name, { terminationGracePeriodSeconds: grace, ...extra }) },
  },
});

const runningOn = (app: string) =>
  waitFor(async () => (await kubectlJson('get', 'pods', '-n', ns.name, '-l', `app=${app}`)).items.some((p: any) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp), 120_000, `${app} running`);

describe('preflight, before anything changes', () => {

  it.concurrent('a pod whose grace period outlasts the drain timeout: refused (exit 10), the node not cordoned', onNode(async (t) => {
    // Its grace period is what preflight judges; the container itself stops at SIGTERM (sleep as PID 1 would ignore it
    // and hold the node for the 300 s once the case deletes it).
    await apply([pinned(t, 'slow-stop', 300, { containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never', command: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1; done'] }] })]);
    await runningOn('slow-stop');
    const args = [t.name, '--to', `containerd=${bed().containerd.new}`, '--output', 'json', '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--timeout', '60s', ...t.flags];
    const result = await upgradeNode(args);
    expect(result.code, result.stderr).toBe(10);
    expect(report(result).error.message).toMatch(new RegExp(`drain would time out: the grace period of ${ns.name}/slow-stop-\\S+ \\(grace 300s\\) is not shorter than --timeout 60s`));
    expect(await schedulable(t)).toBe(true);
    expect((await lease(t.name)).holder).toBeUndefined();
  }));

  it.concurrent('PodDisruptionBudgets are checked again when a killed run resumes: a new budget that blocks rolls it back (uncordoned)', onNode(async (t) => {
    await apply([pinned(t, 'guarded', 5)]);
    await runningOn('guarded');
    // Killed while its before-drain hook sleeps: cordoned, the drain begun, nothing evicted. (Killed at the drain's own
    // line, the kill landed before or after the drain was journaled, and the rollback listed it or not.)
    await upgradeKilledAt(t, bed().containerd.new, 'hook --hook-before-drain', ['--hook-before-drain', 'local:sleep 20']);
    expect(await schedulable(t)).toBe(false);
    await apply([{ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'guarded', namespace: ns.name, labels: { 'node-maint-test': t.name } }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: 'guarded' } } } }]);
    const again = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(again.code, again.stderr).toBe(11);
    const r = report(again);
    expect(r.error.code).toBe('blockedByBudget');
    expect(r.error.message).toContain(`${ns.name}/guarded`);
    // The killed run's drain had begun (its hook runs inside it): undone with nothing to undo, then the uncordon.
    expect(r.rollback.map((x: any) => x.step)).toEqual(['drain', 'cordon']);
    await expectServing(t, bed().containerd.old);
  }));

  it.concurrent('a Deployment whose template sets nodeName: its pods would come straight back, so refused before the cordon (exit 10), naming it', onNode(async (t) => {
    await apply([pinned(t, 'nailed', 2, { nodeName: t.name })]);
    await runningOn('nailed');
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(result.code, result.stderr).toBe(10);
    expect(report(result).error.message).toContain(`drain would not end: Deployment ${ns.name}/nailed (template nodeName ${t.name}) put evicted pods straight back on ${t.name}`);
    expect(result.stderr).not.toContain(stepLine('cordon'));
    expect(await schedulable(t)).toBe(true);
  }));

  it.concurrent('a CNI cache entry that cannot be replayed is found before the drain (exit 10), not after it', onNode(async (t) => {
    const id = 'ab'.repeat(32);
    const entry = `/var/lib/cni/results/ghost-net-${id}-eth0`;
    const message = await refusedWithFile(t, entry, '{"cniVersion":"0.4.0","ips":[{"address":"10.128.9.9/24"}]}');
    expect(message).toContain(`ghost-net-${id}-eth0 (result-only cache entry of network ghost-net and no config to rebuild it from)`);
  }));

  it.concurrent('a CNI network whose IPAM the proof cannot read (calico-ipam on its etcd datastore): refused before the cordon (exit 10), naming it and --proof network-only', onNode(async (t) => {
    const conf = '{"cniVersion":"0.3.1","name":"k8s-pod-network","plugins":[{"type":"calico","ipam":{"type":"calico-ipam"}}]}';
    const message = await refusedWithFile(t, '/etc/cni/net.d/00-node-maint-test-calico.conflist', conf);
    expect(message).toContain(`${t.name}'s CNI network k8s-pod-network allocates pod IPs with the calico-ipam (etcd datastore) IPAM, which node-maint cannot read (it reads host-local, whereabouts, calico-ipam)`);
    expect(message).toContain('give --proof network-only');
  }));

  it.concurrent('a calico-ipam network (Kubernetes datastore) on a cluster that does not serve Calico\'s API: refused before the cordon (exit 10), naming --proof network-only', onNode(async (t) => {
    const api = await apiFilter(['/apis/crd.projectcalico.org']);
    try {
      const conf = '{"cniVersion":"0.3.1","name":"k8s-pod-network","plugins":[{"type":"calico","datastore_type":"kubernetes","ipam":{"type":"calico-ipam"}}]}';
      const message = await refusedWithFile(t, '/etc/cni/net.d/00-node-maint-test-calico.conflist', conf, api.kubeconfig);
      expect(message).toBe(`${t.name}'s CNI network k8s-pod-network allocates pod IPs with calico-ipam, but the cluster serves no /apis/crd.projectcalico.org/v1: its allocations cannot be read (give --proof network-only to maintain it with the weaker proof)`);
    } finally {
      await api.close();
    }
  }));

  it.concurrent('a whereabouts network on a cluster that does not serve whereabouts\' API: refused before the cordon (exit 10), naming --proof network-only', onNode(async (t) => {
    // The run's API through a proxy that answers 404 for the group, as a cluster without whereabouts' CRDs does.
    const api = await apiFilter(['/apis/whereabouts.cni.cncf.io']);
    try {
      const conf = '{"cniVersion":"0.4.0","name":"wb-pods","plugins":[{"type":"bridge","ipam":{"type":"whereabouts","range":"10.211.0.0/16"}}]}';
      const message = await refusedWithFile(t, '/etc/cni/net.d/00-node-maint-test-whereabouts.conflist', conf, api.kubeconfig);
      expect(message).toBe(`${t.name}'s CNI network wb-pods allocates pod IPs with whereabouts, but the cluster serves no /apis/whereabouts.cni.cncf.io/v1alpha1: its allocations cannot be read (give --proof network-only to maintain it with the weaker proof)`);
      expect(api.asked).toContain(`GET /api/v1/nodes/${t.name}`);
      expect(api.asked).toContain('GET /apis/whereabouts.cni.cncf.io/v1alpha1');
    } finally {
      await api.close();
    }
  }));

  it.concurrent('a CNI config whose host-local dataDir climbs out with "..": refused (exit 10), nothing read or cleared there', onNode(async (t) => {
    const conf = '{"cniVersion":"0.4.0","name":"odd","plugins":[{"type":"bridge","ipam":{"type":"host-local","dataDir":"/var/lib/../../etc","subnet":"10.201.0.0/24"}}]}';
    const message = await refusedWithFile(t, '/etc/cni/net.d/99-node-maint-test-datadir.conflist', conf);
    expect(message).toContain(`names a host-local dataDir that is not a plain absolute path ("/var/lib/../../etc")`);
  }));

  it.concurrent('no crictl on the node: refused (exit 10), since the runtime network could not be checked', onNode(async (t) => {
    await t.sh('mv /usr/local/bin/crictl /usr/local/bin/crictl.nm-test-aside');
    try {
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toContain('has no crictl');
      expect(result.stderr).not.toContain(stepLine('cordon'));
    } finally {
      await t.sh('mv /usr/local/bin/crictl.nm-test-aside /usr/local/bin/crictl');
    }
  }));

  it.concurrent('a node without apt and dpkg (an RPM-based node): refused (exit 10), nothing changed', onNode(async (t) => {
    await t.sh('mv /usr/bin/apt-get /usr/bin/apt-get.nm-test-aside');
    try {
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toContain('only Debian and Ubuntu nodes are supported');
      expect(result.stderr).not.toContain(stepLine('cordon'));
      expect(await schedulable(t)).toBe(true);
    } finally {
      await t.sh('mv /usr/bin/apt-get.nm-test-aside /usr/bin/apt-get');
    }
  }));

  it.concurrent('a containerd that runs from a file no package owns (as kind runs /usr/local/bin/containerd): refused, nothing changed', onNode(async (t) => {
    // A drop-in points the unit at a copy, as kind's own unit runs /usr/local/bin/containerd.
    const dropIn = '/etc/systemd/system/containerd.service.d/90-node-maint-test.conf';
    await t.sh(`cp /usr/bin/containerd /usr/local/bin/containerd && printf '[Service]\\nExecStart=\\nExecStart=/usr/local/bin/containerd\\n' > ${dropIn} && systemctl daemon-reload && systemctl restart containerd`);
    try {
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new));
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toContain('upgrading containerd would not change the running containerd: it runs /usr/local/bin/containerd, which no package owns');
      expect(result.stderr).not.toContain(stepLine('cordon'));
    } finally {
      await t.sh(`rm -f ${dropIn}; systemctl daemon-reload; systemctl restart containerd; rm -f /usr/local/bin/containerd`);
    }
  }));

  it.concurrent('a control-plane node: refused without --allow-control-plane, planned with it', onNode(async (t) => {
    await kubectl('label', 'node', t.name, 'node-role.kubernetes.io/control-plane=', '--overwrite');
    const refused = await upgradeNode(upgradeArgs(t, bed().containerd.new));
    expect(refused.code, refused.stderr).toBe(10);
    expect(report(refused).error.message).toContain('is a control-plane node (label node-role.kubernetes.io/control-plane)');
    expect(report(refused).error.message).toContain('--allow-control-plane');
    const allowed = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--allow-control-plane', '--dry-run']));
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(report(allowed).steps[0].summary).toContain('control plane (label node-role.kubernetes.io/control-plane), allowed');
  }));

  it.concurrent('--allow-control-plane on the node that holds the only kube-apiserver: refused (exit 10), nothing changed', onNode(async (t) => {
    // The node made a kubeadm-style control plane: kubelet runs a static kube-apiserver pod from its manifests
    // directory, and the API reports its mirror pod, the cluster's only one.
    const config = '/var/lib/kubelet/config.yaml';
    const manifest = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'kube-apiserver', namespace: 'kube-system', labels: { component: 'kube-apiserver', tier: 'control-plane' } }, spec: { ...pinnedPodSpec(t.name), nodeSelector: undefined, hostNetwork: true } };
    await t.sh(`cp ${config} ${config}.t45 && echo 'staticPodPath: /etc/kubernetes/manifests' >> ${config} && mkdir -p /etc/kubernetes/manifests && printf '%s' '${JSON.stringify(manifest)}' > /etc/kubernetes/manifests/kube-apiserver.json && systemctl restart kubelet`);
    const mirror = `kube-apiserver-${t.name}`;
    try {
      await waitFor(async () => (await kubectlJson('get', 'pod', '-n', 'kube-system', mirror)).status.phase === 'Running', 120_000, `the mirror pod ${mirror}`);
      const pid = (await t.sh('systemctl show -p MainPID --value kubelet')).trim();
      const refused = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--allow-control-plane']));
      expect(refused.code, refused.stderr).toBe(10);
      expect(report(refused).error.message).toContain(`${t.name} holds the cluster's only kube-apiserver (${mirror}): the run would lose the API it works through; refused whatever --allow-control-plane says`);
      expect(refused.stderr).not.toContain(stepLine('cordon'));
      expect(await schedulable(t)).toBe(true);
      expect((await t.sh('systemctl show -p MainPID --value kubelet')).trim()).toBe(pid);
      expect((await lease(t.name)).holder).toBeUndefined();
    } finally {
      await t.sh(`rm -f /etc/kubernetes/manifests/kube-apiserver.json; mv ${config}.t45 ${config}; systemctl restart kubelet`);
      await kubectl('-n', 'kube-system', 'delete', 'pod', mirror, '--ignore-not-found', '--wait=false');
    }
  }));

  it.concurrent('a runtime that does not answer: the audit says it could not audit (exit 15), never clean', onNode(async (t) => {
    await t.sh('systemctl stop containerd');
    const result = await auditNode([t.name, '--output', 'json', ...t.flags]);
    expect(result.code, result.stderr).toBe(15);
    const audit = JSON.parse(result.stdout);
    expect(audit.verdict).toBe('unverifiable');
    expect(audit.unverifiable.join(' ')).toMatch(/runtime/);
  }));

  it.concurrent('a pod bound to the node after the cordon (the scheduler a moment behind): drained in a second round; then a runtime whose sandbox list fails once kubelet is stopped: the teardown fails closed (never "0 sandboxes") and the node is rolled back', onNode(async (t) => {
    // A pod held by a finalizer keeps the first round waiting; once the first round has evicted it, a pod is bound
    // straight to the node, as a scheduler deciding on a cache that has not seen the cordon yet binds one.
    const held = `held-${t.name}`;
    const late = `late-${t.name}`;
    await holdPodOnNode(ns.name, held, t.name, { 'node-maint-test': t.name });
    let bound: Promise<void> | undefined;
    const bindLate = async () => {
      await waitFor(async () => Boolean((await kubectlJson('get', 'pod', '-n', ns.name, held)).metadata.deletionTimestamp), 60_000, 'held evicted');
      await apply([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: late, namespace: ns.name, labels: { 'node-maint-test': t.name } }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } }]);
      await releaseHeldPod(ns.name, held);
    };
    // crictl answers `info`, but its `pods` fails while kubelet is down: what a runtime too busy to list looks like.
    await t.sh(`mv /usr/local/bin/crictl /usr/local/bin/crictl.nm-test-aside && printf '%s\\n' '#!/bin/sh' \\
      'case " $* " in *" pods "*) systemctl is-active -q kubelet || { echo "context deadline exceeded" >&2; exit 1; } ;; esac' \\
      'exec /usr/local/bin/crictl.nm-test-aside "$@"' > /usr/local/bin/crictl && chmod +x /usr/local/bin/crictl`);
    try {
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new), {
        onStderr: (text) => void (!bound && text.includes(stepLine('drain')) && (bound = bindLate())),
      });
      await bound;
      expect(result.stderr).toContain(`1 pod(s) bound to the node after the cordon, draining them too (round 2): ${ns.name}/${late}\n`);
      expect(result.stderr).toContain(`${ns.name}/${late} gone after`);
      expect(result.code, result.stderr).toBe(11);
      expect(report(result).error.message).toContain('the container runtime did not answer (its sandbox list failed or timed out): could not tear down its sandboxes');
      expect(result.stderr).not.toContain(stepLine('clear-state'));
    } finally {
      await t.sh('mv /usr/local/bin/crictl.nm-test-aside /usr/local/bin/crictl');
    }
    await expectServing(t, bed().containerd.old);
    expect(await kubectl('-n', ns.name, 'get', 'pod', late, '--ignore-not-found')).toBe('');
  }));

  it.concurrent('an eviction answered 409 for a pod replaced by a namesake counts the pod as gone, and leaves the namesake alone', onNode(async (t) => {
    const namesake = () => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'namesake', namespace: ns.name, labels: { 'node-maint-test': t.name } }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } });
    await apply([namesake()]);
    const first: Pod = await kubectlJson('get', 'pod', '-n', ns.name, 'namesake');
    await kubectl('-n', ns.name, 'delete', 'pod', 'namesake', '--grace-period=0', '--force');
    await apply([namesake()]);
    const second: Pod = await kubectlJson('get', 'pod', '-n', ns.name, 'namesake');
    expect(second.metadata.uid).not.toBe(first.metadata.uid);
    const cluster = await Cluster.connect({ kubeconfig: bed().kubeconfig });
    // The API answers 409 (the UID precondition): the pod meant is gone; the namesake is not evicted.
    await evictPod(cluster, first, { gracePeriodSeconds: 0, deadline: Date.now() + 20_000, version: 'policy/v1' });
    expect((await kubectlJson('get', 'pod', '-n', ns.name, 'namesake')).metadata.uid).toBe(second.metadata.uid);
    await kubectl('-n', ns.name, 'delete', 'pod', 'namesake', '--grace-period=0', '--force');
  }));
});
