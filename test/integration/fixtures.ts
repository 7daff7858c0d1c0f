import { applyObjects, auditNode, bedDocker, exists, kubectl, kubectlJson, objectPath, sh, waitFor } from './bed.js';
import type { TestNode } from './pool.js';

// What tests put on their leased nodes (pods of their own namespace, pinned there) and read back from them.

/** The pool's taint, which only pods a test pins to its node tolerate (and the bed's DaemonSet). */
export const POOL_TOLERATION = { key: 'node-maint.io/pool', operator: 'Exists', effect: 'NoSchedule' };

/** Where host-local keeps the node's reservations: kubenet on the docker nodes, containerd's template network else. */
export const reservationsDir = (t: TestNode) => `/var/lib/cni/networks/${t.flavour === 'docker' ? 'kubenet' : 'containerd-net'}`;

/** A pod template pinned to the node (its hostname label), tolerating the pool's taint, quick to stop. */
export function pinnedPodSpec(node: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    nodeSelector: { 'kubernetes.io/hostname': node },
    tolerations: [POOL_TOLERATION],
    terminationGracePeriodSeconds: 2,
    containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600000'] }],
    ...extra,
  };
}

export const deployment = (ns: string, name: string, node: string, replicas: number, spec: Record<string, unknown> = {}, labels: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: ns, labels },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: pinnedPodSpec(node, spec) } },
});

/** A Deployment of busybox pods pinned to the node, running. */
export async function pinnedDeployment(ns: string, name: string, node: string, replicas: number): Promise<any[]> {
  await applyObjects([deployment(ns, name, node, replicas)]);
  return waitForRunning(ns, `app=${name}`, replicas);
}

export async function waitForRunning(ns: string, selector: string, count: number): Promise<any[]> {
  let pods: any[] = [];
  await waitFor(async () => {
    pods = (await kubectlJson('get', 'pods', '-n', ns, '-l', selector)).items.filter((p: any) => !p.metadata.deletionTimestamp);
    return pods.length === count && pods.every((p: any) => p.status.phase === 'Running' && p.status.podIP);
  }, 240_000, `${count} pod(s) ${selector} running in ${ns}`);
  return pods;
}

/** A bare pod bound to the node, held by a finalizer: once evicted it stays Terminating until releaseHeldPod. */
export async function holdPodOnNode(ns: string, name: string, node: string, labels: Record<string, string> = {}): Promise<void> {
  await applyObjects([{ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels, finalizers: ['node-maint.test/hold'] }, spec: { ...pinnedPodSpec(node), nodeName: node } }]);
  await waitFor(async () => (await kubectlJson('get', 'pod', '-n', ns, name)).status.phase === 'Running', 120_000, `${name} running`);
}

export const releaseHeldPod = (ns: string, name: string) => kubectl('-n', ns, 'patch', 'pod', name, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}');

/** No pod on these nodes is being deleted: what a test that compares before and after must start from. */
export async function waitForNoTerminatingPods(nodes: string[]): Promise<void> {
  await waitFor(async () => {
    for (const node of nodes) {
      const pods = (await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${node}`)).items;
      if (pods.some((p: any) => p.metadata.deletionTimestamp)) return false;
    }
    return true;
  }, 180_000, `no pod terminating on ${nodes.join(', ')}`);
}

/** The node's sandboxes as its runtime lists them (IDs in full). */
export const sandboxIds = async (t: TestNode, state: 'ready' | 'notready' | 'all' = 'ready') =>
  (await t.sh(`crictl pods ${state === 'all' ? '' : `--state ${state}`} -q --no-trunc`)).split('\n').filter(Boolean);

/** Everything a run could change on the node and in the API, to compare before and after. */
export async function nodeFingerprint(t: TestNode): Promise<Record<string, string>> {
  const node = await kubectlJson('get', 'node', t.name);
  const pods = await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${t.name}`);
  const lease = String(await exists(objectPath('lease', `node-maint-${t.name}`, 'kube-system')));
  return {
    files: await t.sh('find /var/lib/cni /var/lib/cri-dockerd /var/lib/dockershim /etc/cni -type f 2>/dev/null | sort | xargs -r md5sum'),
    packages: await t.sh("dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' containerd docker.io runc 2>/dev/null || true"),
    units: await t.sh('for u in kubelet containerd docker cri-docker; do systemctl show -p MainPID $u; done'),
    // Running ones only: kubelet's own garbage collection removes exited containers whenever it likes.
    containers: (await t.sh('crictl ps -q --no-trunc --state running')).split('\n').sort().join('\n'),
    sandboxes: (await sandboxIds(t)).sort().join('\n'),
    unschedulable: String(node.spec.unschedulable ?? false),
    pods: pods.items.map((p: any) => `${p.metadata.uid} ${p.metadata.deletionTimestamp ?? ''}`).sort().join('\n'),
    lease,
    backups: await t.sh('ls -R /var/lib/node-maint 2>/dev/null || true'),
  };
}

/** Host-local reservations on the node whose container the runtime does not know: the ground truth, by shell. */
export async function deadReservations(t: TestNode): Promise<string[]> {
  const out = await t.sh(`
    live=$(crictl pods -q --no-trunc)
    for f in ${reservationsDir(t)}/[0-9]*; do
      [ -f "$f" ] || continue
      id=$(head -n1 "$f" | tr -d '\\r')
      case "$live" in *"$id"*) ;; *) basename "$f" ;; esac
    done`);
  return out.split('\n').filter(Boolean).sort();
}

export const nodeAudit = (t: TestNode, extra: string[] = []) => auditNode([t.name, '--output', 'json', ...extra, ...t.flags]);

/** The node's audit (JSON) once no sandbox is in setup on it: one kubelet is still making after a crash is no answer yet. */
export async function settledNodeAudit(t: TestNode, extra: string[] = []): Promise<any> {
  let report: any;
  await waitFor(async () => !(report = JSON.parse((await nodeAudit(t, extra)).stdout)).inSetup, 120_000, `${t.name}'s audit with no sandbox in setup`);
  return report;
}

/**
 * Field report 000 on a docker node: docker upgraded by hand (kubelet stopped, containers removed with docker rm -f,
 * kubelet started before the node has a PodCIDR). kubelet's teardown fails ("kubenet needs a PodCIDR to tear down
 * pods"), cri-dockerd drops the checkpoint anyway, and the host-local files and CNI cache entries stay. The bed's node
 * IPAM is held back meanwhile (the caller leases resource:node-ipam). Leaves `app` running.
 */
export async function upgradeByHandLikeTheFieldReport(t: TestNode, ns: string, app: string, replicas: number): Promise<void> {
  await pinnedDeployment(ns, app, t.name, replicas);
  const since = (await t.sh('date +%s')).trim();
  await t.sh(`
    systemctl stop kubelet
    docker rm -f $(docker ps -aq --filter label=io.kubernetes.pod.uid) >/dev/null
    systemctl restart docker cri-docker`);
  const cidr: string = (await kubectlJson('get', 'node', t.name)).spec.podCIDR;
  await sh('bash testbed/ctl stop node-ipam');
  try {
    // The node comes back without a PodCIDR while the node IPAM is down.
    await kubectl('delete', 'node', t.name, '--wait=true');
    await t.sh('systemctl start kubelet');
    const failures = async () => Number((await t.sh(`journalctl -u kubelet --since @${since} --no-pager | grep -c "kubenet needs a PodCIDR to tear down pods" || true`)).trim());
    await waitFor(async () => (await failures()) >= replicas, 180_000, 'kubelet to fail its teardowns');
    // kubelet fails its teardowns before it has registered the Node again, on a busy machine: the patch needs the object.
    await waitFor(async () => exists(objectPath('node', t.name)), 120_000, `${t.name} registered again`);
    // Then its range again, the one it had (kubenet's bridge still has its address): given as an IPAM outside the
    // controller-manager gives it, which the node IPAM, started again, respects.
    await kubectl('patch', 'node', t.name, '--type', 'merge', '-p', JSON.stringify({ spec: { podCIDR: cidr, podCIDRs: [cidr] } }));
  } finally {
    await sh('bash testbed/ctl start');
  }
  await waitFor(async () => (await kubectlJson('get', 'node', t.name)).spec.podCIDR === cidr, 120_000, 'the node to get its PodCIDR');
  // Statuses from before the restart still say Running with the old IPs: wait until each pod's IP is its new sandbox's.
  await waitFor(async () => {
    const pods = await waitForRunning(ns, `app=${app}`, replicas);
    const owners = await t.sh(pods.map((p) => `echo "$(head -n1 ${reservationsDir(t)}/${p.status.podIP} 2>/dev/null | tr -d '\\r')"`).join('\n'));
    const live = await sandboxIds(t);
    return owners.split('\n').slice(0, pods.length).every((id) => id !== '' && live.includes(id));
  }, 180_000, `every ${app} pod on a live sandbox`);
}

/**
 * What the operator does after the crash, before kubelet is back, on each runtime. docker: prune the exited containers.
 * containerd: its own records survive a prune (RemovePodSandbox stops even a NotReady sandbox, with its CNI DEL), so the
 * field's other clean-up: its metadata store, corrupt after the power cut, wiped with the rest of /var/lib/containerd
 * (and the images loaded again). Either way the sandboxes' records go before any DEL could run.
 */
const CLEAN_UP = {
  docker: { held: 'kubelet', command: 'docker container prune -f >/dev/null' },
  containerd: { held: 'kubelet containerd', command: 'rm -rf /var/lib/containerd && systemctl start containerd && systemctl restart testbed-images' },
} as const;

/**
 * Crashes the node (its container killed and started again) with kubelet kept off, and cleans up before kubelet is
 * back; `whileKubeletOff` runs after the clean-up, before kubelet starts.
 */
export async function crashAndCleanUp(t: TestNode, whileKubeletOff: () => Promise<unknown> = async () => undefined) {
  const { held, command } = CLEAN_UP[t.flavour];
  // Kept from starting at boot for the length of the clean-up, as an operator cleaning up first would have them.
  await t.sh(`systemctl disable ${held} >/dev/null 2>&1`);
  try {
    await bedDocker('kill', t.container);
    await bedDocker('start', t.container);
    await waitFor(async () => /running|degraded/.test(await t.sh('systemctl is-system-running --wait || true').catch(() => '')), 120_000, `${t.name} booted`);
    await t.sh(command);
    await whileKubeletOff();
  } finally {
    await t.sh(`systemctl enable --now ${held} >/dev/null 2>&1`);
  }
}

/**
 * A systemd drop-in of the test's own for `unit`, under /etc (a reboot keeps it; the pool's reset removes every
 * 90-node-maint-test.conf): its path. Lines hold no single quote.
 */
export async function testDropIn(t: TestNode, unit: string, lines: string[]): Promise<string> {
  const path = `/etc/systemd/system/${unit}.d/90-node-maint-test.conf`;
  await t.sh(`mkdir -p /etc/systemd/system/${unit}.d && printf '%s\\n' '[Service]' ${lines.map((l) => `'${l}'`).join(' ')} > ${path} && systemctl daemon-reload`);
  return path;
}

/** The node's boot as a container node has it: PID 1's start (field 22 of /proc/1/stat; its container keeps the host's boot_id). */
export const bootOf = async (t: TestNode) => (await t.sh(`sed 's/^.*) //' /proc/1/stat | cut -d' ' -f20`)).trim();

/** The node's sshd starts `seconds` late at each boot: a reboot leaves what the runbook reaches it by silent that long. */
export const slowSshdAtBoot = (t: TestNode, seconds = 15) => testDropIn(t, 'ssh.service', [`ExecStartPre=/bin/sleep ${seconds}`, 'TimeoutStartSec=300']);

/**
 * The node's sshd waits at each boot until `release()` (a gate file under /var/lib, kept by a reboot): the node stays
 * silent for as long as the test needs, whatever the speed of what it runs meanwhile.
 */
export async function sshdHeldAtBoot(t: TestNode) {
  const gate = '/var/lib/node-maint-test-sshd-gate';
  await t.sh(`touch ${gate}`);
  const dropIn = await testDropIn(t, 'ssh.service', [`ExecStartPre=/bin/sh -c "while [ -e ${gate} ]; do sleep 1; done"`, 'TimeoutStartSec=900']);
  return { dropIn, release: () => t.sh(`rm -f ${gate}`) };
}

/** Until the node is on a new boot and its sshd not up yet (slowSshdAtBoot, sshdHeldAtBoot); a reboot on a loaded
 *  machine takes as long as a run's --reboot-timeout 180s allows. */
export const untilSshDown = (t: TestNode, boot: string) =>
  waitFor(async () => (await bootOf(t)) !== boot && (await t.sh('systemctl is-active ssh || true')).trim() !== 'active', 180_000, `${t.name} rebooted, its sshd not up yet`);
