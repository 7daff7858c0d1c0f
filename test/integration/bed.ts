import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { inject } from 'vitest';

// Helpers over the local test cluster: its env, kubectl, the runbook CLI as a user runs it, and node fixtures.
const exec = promisify(execFile);

export interface Testbed {
  kubeconfig: string;
  sshKey: string;
  knownHosts: string;
  sshUser: string;
  bedDockerHost: string;
  kubectl: string;
  pulumiDir: string;
  /** faulty: the bed's +nmtest1, Debian's new version with fault hooks (testbed/packages/fault-hooks.sh). */
  containerd: { old: string; new: string; faulty: string };
  /** new: Debian's docker.io repacked as a higher version, with the same fault hooks. */
  docker: { old: string; new: string };
  realNode: string;
  nodes: Array<{ name: string; sshPort: number; container: string | null }>;
  /** The bed's kind cluster (testbed/lib/kind.sh): its nodes are containers on the bed's dockerd. */
  kind: { name: string; kubeconfig: string; controlPlane: string; workers: string[]; bin: string } | null;
  /** The bed's Prometheus (testbed/lib/monitoring.sh), scraping node-exporter's textfile collector on the real node. */
  prometheus: string;
  /** node-exporter's textfile directory on the real node (this machine). */
  textfileDir: string;
}

export const bed = (): Testbed => JSON.parse(inject('testbed')) as Testbed;

export async function kubectl(...args: string[]): Promise<string> {
  const b = bed();
  const { stdout } = await exec(b.kubectl, ['--kubeconfig', b.kubeconfig, ...args], { maxBuffer: 64 * 2 ** 20 });
  return stdout;
}

export async function kubectlJson<T = any>(...args: string[]): Promise<T> {
  return JSON.parse(await kubectl(...args, '-o', 'json')) as T;
}

/** Watches one node and collects each distinct value of a label it shows, in order (a watch, so no value is missed). */
export function watchNodeLabel(node: string, label: string): { seen: () => string[]; stop: () => string[] } {
  const b = bed();
  const jsonpath = `{.metadata.labels.${label.replace(/\./g, '\\.')}}{"\\n"}`;
  const child = spawn(b.kubectl, ['--kubeconfig', b.kubeconfig, 'get', 'node', node, '-w', '-o', `jsonpath=${jsonpath}`]);
  const seen: string[] = [];
  let buffer = '';
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const value of lines) if (seen.at(-1) !== value) seen.push(value);
  });
  return { seen: () => seen, stop: () => (child.kill(), seen) };
}

/** The Events node-maint posted on a node for one run, oldest first: "Reason: message". */
export async function nodeMaintEvents(node: string, runId: string): Promise<string[]> {
  const list = await kubectlJson('get', 'events', '-n', 'default', '--field-selector', `involvedObject.kind=Node,involvedObject.name=${node}`);
  return list.items
    .filter((e: any) => e.source?.component === 'node-maint' && e.reportingInstance === runId)
    .sort((a: any, b: any) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp) || Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion))
    .map((e: any) => `${e.reason}: ${e.message}`);
}

export async function sh(script: string): Promise<string> {
  const { stdout } = await exec('bash', ['-c', script], { maxBuffer: 64 * 2 ** 20 });
  return stdout;
}

/** The flags that reach a bed node over SSH as the non-root user, with the bed's key and known_hosts. */
export function sshFlags(node: string): string[] {
  const b = bed();
  const n = b.nodes.find((x) => x.name === node)!;
  return ['--kubeconfig', b.kubeconfig, '--ssh-host', '127.0.0.1', '--ssh-port', String(n.sshPort), '--ssh-user', b.sshUser, '--ssh-key', b.sshKey, '--known-hosts', b.knownHosts];
}

export const DRAIN_FLAGS = ['--ignore-daemonsets', '--delete-emptydir-data', '--force', '--grace-period', '5'];

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a runbook entry point as an operator would: zx, a child process, its exit code. */
export function runCli(script: string, args: string[], options: { onStderr?: (chunk: string, kill: () => void) => void } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('node_modules/.bin/zx', [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      options.onStderr?.(stderr, () => child.kill('SIGKILL'));
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr }));
  });
}

export const upgradeNode = (args: string[], options?: Parameters<typeof runCli>[2]) => runCli('runbooks/upgrade-node.mjs', args, options);

export const installedContainerd = async () => (await sh("dpkg-query -W -f='${Version}' containerd")).trim();

/** Where the bed's fault hooks look (testbed/packages/fault-hooks.sh, testbed/node/kubelet-with-faults). */
export const FAULTS_DIR = '/run/node-maint-test-faults';

/**
 * Puts the real node back where the upgrade tests start: containerd and docker.io at the old versions through apt, every unit
 * running, schedulable, no Lease, the seeded workloads back and running on it.
 */
export async function resetRealNode(version = bed().containerd.old): Promise<void> {
  const b = bed();
  // Held, as the bed holds them (and production nodes do): changed with --allow-change-held-packages, held again.
  // Prints the node's clock when it (re)starts kubelet: until kubelet posts, the node shows the Ready it had before.
  const restartedAt = await sh(`
    set -e
    rm -rf /etc/apt/apt.conf.d/99node-maint-test-fail ${FAULTS_DIR}
    dpkg --configure -a >/dev/null 2>&1 || true
    [ "$(systemctl is-active kubelet)" = active ] || date +%s
    if [ "$(dpkg-query -W -f='\${Version} \${db:Status-Abbrev}|' containerd docker.io)" != '${version} hi |${b.docker.old} hi |' ]; then
      date +%s; systemctl stop kubelet cri-docker docker containerd
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall --allow-downgrades --allow-change-held-packages -o Dpkg::Options::=--force-confold containerd='${version}' docker.io='${b.docker.old}' >/dev/null
      apt-mark hold containerd docker.io >/dev/null
    fi
    systemctl start containerd docker cri-docker kubelet`);
  await kubectl('-n', 'kube-system', 'delete', 'lease', `node-maint-${b.realNode}`, '--ignore-not-found');
  await kubectl('uncordon', b.realNode);
  await waitFor(async () => {
    const node = await kubectlJson('get', 'node', b.realNode);
    const ready = node.status.conditions.find((c: any) => c.type === 'Ready');
    const posted = Date.parse(ready?.lastHeartbeatTime ?? '') >= Number(restartedAt.trim().split('\n')[0] || 0) * 1000;
    return ready?.status === 'True' && posted && !(node.spec.taints ?? []).some((t: any) => t.effect === 'NoSchedule');
  }, 180_000, 'the real node Ready (posted by its running kubelet) and untainted');
  await kubectl('apply', '-f', 'testbed/manifests/workloads.yaml');
  // Evicted replicas went elsewhere; a restart brings the ones that prefer the real node back to it.
  await kubectl('-n', 'demo', 'rollout', 'restart', 'deployment/api', 'deployment/cache');
  // The whole rollout, not just its first pods: a test that compares the node before and after needs it still.
  await kubectl('-n', 'demo', 'rollout', 'status', 'deployment/api', '--timeout=180s');
  await kubectl('-n', 'demo', 'rollout', 'status', 'deployment/cache', '--timeout=180s');
  await waitFor(async () => {
    const pods = await kubectlJson('get', 'pods', '-n', 'demo', '--field-selector', `spec.nodeName=${b.realNode}`);
    const running = pods.items.filter((p: any) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp);
    return running.some((p: any) => p.metadata.ownerReferences?.[0]?.kind === 'ReplicaSet') && running.length === pods.items.length;
  }, 180_000, 'seeded pods running on the real node');
  // What kubelet's garbage collection would remove within a minute (dead sandboxes of replaced pods), removed now,
  // so that a test comparing the node before and after sees only its own doing.
  await waitFor(async () => {
    await sh('crictl pods --state notready -q | xargs -r crictl rmp >/dev/null 2>&1 || true');
    const counts = await sh('ls /var/lib/cri-dockerd/sandbox | wc -l; crictl pods --state ready -q | wc -l');
    const [checkpoints, ready] = counts.trim().split('\n');
    return checkpoints === ready;
  }, 120_000, 'only live sandboxes on the real node');
}

/** No pod anywhere is being deleted: what a test that compares the cluster before and after must start from. */
export async function waitForNoTerminatingPods(): Promise<void> {
  await waitFor(async () => (await kubectlJson('get', 'pods', '-A')).items.every((p: any) => !p.metadata.deletionTimestamp), 180_000, 'no pod terminating');
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Everything a run could change on the real node and in the API, to compare before and after. */
export async function realNodeFingerprint(): Promise<Record<string, string>> {
  const b = bed();
  const node = await kubectlJson('get', 'node', b.realNode);
  const pods = await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${b.realNode}`);
  const leases = await kubectl('-n', 'kube-system', 'get', 'leases', '-o', 'name');
  return {
    files: await sh('find /var/lib/cni /var/lib/cri-dockerd /var/lib/dockershim /etc/cni -type f 2>/dev/null | sort | xargs -r md5sum'),
    packages: await sh("dpkg-query -W -f='${Package} ${Version}\\n' containerd docker.io runc"),
    units: await sh('for u in kubelet containerd docker cri-docker; do systemctl show -p MainPID $u; done'),
    // Running ones only: kubelet's own garbage collection removes exited containers whenever it likes.
    containers: await sh("docker ps --no-trunc --format '{{.ID}} {{.State}}' | sort"),
    unschedulable: String(node.spec.unschedulable ?? false),
    pods: pods.items.map((p: any) => `${p.metadata.uid} ${p.metadata.deletionTimestamp ?? ''}`).sort().join('\n'),
    leases: leases.split('\n').filter((l: string) => l.includes('node-maint')).join('\n'),
    backups: await sh('ls -R /var/lib/node-maint 2>/dev/null || true'),
  };
}

export const auditNode = (args: string[], options?: Parameters<typeof runCli>[2]) => runCli('runbooks/audit-node.mjs', args, options);

/** Host-local files on the real node whose container docker does not know: the ground truth, by shell. */
export async function deadReservations(): Promise<string[]> {
  const out = await sh(`
    live=$(docker ps -aq --no-trunc)
    for f in /var/lib/cni/networks/kubenet/[0-9]*; do
      [ -f "$f" ] || continue
      id=$(head -n1 "$f" | tr -d '\\r')
      case "$live" in *"$id"*) ;; *) basename "$f" ;; esac
    done`);
  return out.split('\n').filter(Boolean).sort();
}

/** A Deployment of busybox pods pinned to the real node. */
export async function pinnedDeployment(name: string, replicas: number): Promise<void> {
  const manifest = JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'demo' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': bed().realNode },
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600000'] }],
        },
      },
    },
  });
  await sh(`echo '${manifest}' | ${bed().kubectl} --kubeconfig ${bed().kubeconfig} apply -f -`);
  await waitForRunning(`app=${name}`, replicas);
}

/** A bare demo pod bound to the node, held by a finalizer: once evicted it stays Terminating until releaseHeldPod. */
export async function holdPodOnNode(name: string, node: string, labels: Record<string, string> = {}): Promise<void> {
  await kubectl('-n', 'demo', 'run', name, '--image=testbed/busybox:1', '--image-pull-policy=Never', '--restart=Never',
    `--overrides=${JSON.stringify({ metadata: { labels, finalizers: ['node-maint.test/hold'] }, spec: { nodeName: node } })}`);
  await waitFor(async () => (await kubectlJson('get', 'pod', '-n', 'demo', name)).status.phase === 'Running', 60_000, `${name} running`);
}

export const releaseHeldPod = (name: string) => kubectl('-n', 'demo', 'patch', 'pod', name, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}');

export async function waitForRunning(selector: string, count: number): Promise<any[]> {
  let pods: any[] = [];
  await waitFor(async () => {
    pods = (await kubectlJson('get', 'pods', '-n', 'demo', '-l', selector)).items.filter((p: any) => !p.metadata.deletionTimestamp);
    return pods.length === count && pods.every((p: any) => p.status.phase === 'Running' && p.status.podIP);
  }, 240_000, `${count} pod(s) ${selector} running`);
  return pods;
}

export const realNodeAudit = (extra: string[] = []) => auditNode([bed().realNode, '--output', 'json', ...extra, ...sshFlags(bed().realNode)]);

/**
 * Field report 000: docker upgraded by hand (kubelet stopped, containers removed with docker rm -f, kubelet started
 * before the node has a PodCIDR). kubelet's teardown fails ("kubenet needs a PodCIDR to tear down pods"),
 * cri-dockerd drops the checkpoint anyway, and the host-local files and CNI cache entries stay. Leaves `app` running.
 */
export async function upgradeByHandLikeTheFieldReport(app: string, replicas: number): Promise<void> {
  await pinnedDeployment(app, replicas);
  const logStart = (await sh('wc -l < /var/log/systemd-standin/kubelet.log')).trim();
  await sh(`
    systemctl stop kubelet
    docker rm -f $(docker ps -aq --filter label=io.kubernetes.pod.uid) >/dev/null
    systemctl restart docker cri-docker
    bash testbed/ctl stop kube-controller-manager`);
  // The node comes back without a PodCIDR while the controller manager is down.
  await kubectl('delete', 'node', bed().realNode, '--wait=false');
  await sh('sleep 2; systemctl start kubelet');
  const failures = () => sh(`tail -n +${logStart} /var/log/systemd-standin/kubelet.log | grep -c "kubenet needs a PodCIDR to tear down pods" || true`);
  await waitFor(async () => Number(await failures()) >= replicas, 120_000, 'kubelet to fail its teardowns');
  await sh('bash testbed/ctl start');
  await waitFor(async () => Boolean((await kubectlJson('get', 'node', bed().realNode)).spec.podCIDR), 120_000, 'the node to get its PodCIDR');
  // Statuses from before the restart still say Running with the old IPs: wait until each pod's IP is its new sandbox's.
  await waitFor(async () => {
    const pods = await waitForRunning(`app=${app}`, replicas);
    const owners = await sh(pods.map((p) => `echo "$(head -n1 /var/lib/cni/networks/kubenet/${p.status.podIP} 2>/dev/null | tr -d '\\r')"`).join('\n'));
    const live = await sh('docker ps -q --no-trunc --filter label=io.kubernetes.docker.type=podsandbox');
    return owners.split('\n').slice(0, pods.length).every((id) => id !== '' && live.includes(id));
  }, 180_000, `every ${app} pod on a live sandbox`);
}
