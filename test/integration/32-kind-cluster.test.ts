import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, auditNode, bed, DRAIN_FLAGS, upgradeNode, waitFor } from './bed.js';
import { FAULTS_DIR, stepLine } from './faults.js';
import { requesterKubeconfig, withDocumentedInstall } from './agent.js';

// The bed's real kind cluster (testbed/lib/kind.sh): real systemd, a real kubelet and Debian's containerd from apt on
// each node, pods with real containerd sandboxes on kindnetd's network (ptp + host-local in /run/cni-ipam-state).
const exec = promisify(execFile);
const kind = () => {
  const k = bed().kind;
  if (!k) throw new Error('the bed has no kind cluster: run testbed/up without --no-kind');
  return k;
};
const onNode = async (node: string, script: string) =>
  (await exec('docker', ['-H', bed().bedDockerHost, 'exec', node, 'sh', '-c', script], { maxBuffer: 16 * 2 ** 20 })).stdout;
const kindKubectl = async (...args: string[]) => (await exec(bed().kubectl, ['--kubeconfig', kind().kubeconfig, ...args])).stdout;
const access = (node: string) => ['--kubeconfig', kind().kubeconfig, '--transport', 'docker-exec', '--container', node, '--docker-host', bed().bedDockerHost];
const containerd = async (node: string) => (await onNode(node, "dpkg-query -W -f='${Version} ${db:Status-Abbrev}' containerd")).trim();
const runningContainerd = async (node: string) =>
  (await onNode(node, 'pid=$(systemctl show -p MainPID --value containerd); echo "$(readlink /proc/$pid/exe) $(systemctl show -p ExecMainStartTimestampMonotonic --value containerd)"')).trim().split(' ');
const webReady = async () => JSON.parse(await kindKubectl('-n', 'demo', 'get', 'deploy', 'web', '-o', 'json')).status.readyReplicas === 6;

/** A worker back at the old containerd through its apt, held, serving, uncordoned, no runbook Lease. */
async function resetWorker(node: string): Promise<void> {
  const old = bed().containerd.old;
  // docker.io and fault switches left by a run of the socket case killed midway go (the case sets them itself).
  await onNode(node, `rm -rf ${FAULTS_DIR}
    if dpkg-query -W docker.io >/dev/null 2>&1; then DEBIAN_FRONTEND=noninteractive apt-get purge -y -q --allow-change-held-packages docker.io >/dev/null; fi
    if [ "$(dpkg-query -W -f='\${Version}' containerd)" != '${old}' ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades --allow-change-held-packages -o Dpkg::Options::=--force-confold containerd='${old}' >/dev/null
    fi
    apt-mark hold containerd >/dev/null; systemctl start containerd kubelet`);
  await kindKubectl('uncordon', node);
  await kindKubectl('-n', 'kube-system', 'delete', 'lease', `node-maint-${node}`, '--ignore-not-found');
  await waitFor(webReady, 120_000, 'demo/web back at 6 ready pods');
}

/**
 * Runs fn with a pod of our own on the node: a DaemonSet's, so that the drain leaves it (as kube-proxy or a CNI agent)
 * and the run's teardown has a live sandbox to remove. A bare pod would be evicted, and kubelet's garbage collection
 * may remove its sandbox before kubelet stops (so "0 sandboxes" could not tell the teardown's work from kubelet's).
 * The web pods may all be on the other worker, and host-local makes its directory only with the node's first pod IP
 * since boot (/run is tmpfs): the neighbour gives the node a live sandbox.
 */
async function withNeighbour(node: string, fn: () => Promise<void>): Promise<void> {
  const labels = { app: 'neighbour' };
  await applyObjects([{
    apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'neighbour', namespace: 'demo' },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': node },
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10', imagePullPolicy: 'Never', command: ['/usr/local/bin/pause'] }],
        },
      },
    },
  }], kindKubectl);
  try {
    await waitFor(async () => JSON.parse(await kindKubectl('-n', 'demo', 'get', 'pods', '-l', 'app=neighbour', '-o', 'json')).items.some((p: any) => p.status.podIP && p.status.phase === 'Running'), 60_000, 'the neighbour pod to get an IP');
    await fn();
  } finally {
    // Foreground: returns once its pod is gone, so the next case finds no pod of ours Terminating.
    await kindKubectl('-n', 'demo', 'delete', 'daemonset', 'neighbour', '--ignore-not-found', '--cascade=foreground', '--timeout=120s');
  }
}

/** A reservation no sandbox holds, found by the audit and reclaimed. */
async function leakAndReclaim(node: string, leak: string): Promise<void> {
  await onNode(node, `printf '${'ab'.repeat(32)}\\r\\neth0' > ${leak}`);
  const audit = await auditNode([node, '--output', 'json', ...access(node)]);
  expect(audit.code, audit.stderr).toBe(13);
  expect(JSON.parse(audit.stdout).findings.map((f: any) => `${f.class} ${f.evidence.file}`)).toEqual([`ip-reservation-leaked ${leak}`]);
  const reclaim = await auditNode([node, '--output', 'json', '--reclaim', '--grace', '0', '--interval', '1', ...access(node)]);
  expect(reclaim.code, reclaim.stderr).toBe(0);
  expect(JSON.parse(reclaim.stdout).after.findings).toEqual([]);
  expect(await onNode(node, `test -e ${leak} && echo present || echo gone`)).toContain('gone');
}

/**
 * The README's fleet quick start (the shell block between its fleet-quick-start markers), run by bash as written, then
 * `then`, in a scratch copy of the project (Pulumi.yaml; dist, node_modules and testbed linked) with a scratch HOME, so
 * the stack file and state it makes stay out of the checkout. Returns that HOME.
 */
/** The README's shell block between <!-- NAME --> and <!-- /NAME -->, as written. */
function readmeBlock(name: string): string {
  const block = readFileSync('README.md', 'utf8').split(`<!-- ${name} -->`)[1]?.split(`<!-- /${name} -->`)[0];
  const script = block?.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (!script) throw new Error(`README.md has no shell block between <!-- ${name} --> markers`);
  return script;
}

async function runQuickStart(then: string): Promise<string> {
  const script = readmeBlock('fleet-quick-start');
  const project = mkdtempSync('/tmp/node-maint-quick-start-');
  copyFileSync('Pulumi.yaml', join(project, 'Pulumi.yaml'));
  for (const linked of ['dist', 'node_modules', 'testbed']) symlinkSync(resolve(linked), join(project, linked));
  const home = join(project, 'home');
  mkdirSync(home);
  const env = { PATH: process.env.PATH!, HOME: home, PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true' };
  const run = await exec('bash', ['-euo', 'pipefail', '-c', `${script}\n${then}`], { cwd: project, env, maxBuffer: 64 * 2 ** 20, timeout: 1_800_000 }).catch((e) => {
    throw new Error(`the README's quick start failed: ${e.stdout}\n${e.stderr}`);
  });
  expect(run.stdout + run.stderr).toContain("Created stack 'kind'");
  return home;
}

describe('a real kind cluster: real systemd, real kubelet, Debian containerd', () => {
  beforeAll(async () => {
    // Frozen by the suite's setup while the other files run (test/integration/global-setup.ts).
    await exec('bash', ['testbed/ctl', 'kind-resume']);
    for (const w of kind().workers) await resetWorker(w);
  });
  afterAll(() => exec('bash', ['testbed/ctl', 'kind-pause']));

  it('finds a leaked reservation under kindnetd\'s /run/cni-ipam-state on a worker and reclaims it', async () => {
    const node = kind().workers[1]!;
    const cidr = (await kindKubectl('get', 'node', node, '-o', 'jsonpath={.spec.podCIDR}')).trim();
    const leak = `/run/cni-ipam-state/kindnet/${cidr.replace(/\.0\/24$/, '.250')}`;
    await withNeighbour(node, () => leakAndReclaim(node, leak));
  });

  it('the README\'s one-node commands on kind, run as written: the audit, then upgrade-node through docker exec; systemd restarts containerd on the new binary, the sandboxes go through crictl, no leak', async () => {
    const worker = kind().workers[0]!;
    const { new: target, old } = bed().containerd;
    await resetWorker(worker);
    // Our own DaemonSet pod there too: the drain leaves it, so the teardown has a sandbox to remove.
    await withNeighbour(worker, async () => {
      const [, startedBefore] = await runningContainerd(worker);
      expect(Number((await onNode(worker, 'crictl pods -q | wc -l')).trim())).toBeGreaterThan(0);
      const run = await exec('bash', ['-euo', 'pipefail', '-c', readmeBlock('kind-one-node')], { maxBuffer: 64 * 2 ** 20, timeout: 900_000 }).catch((e) => {
        throw new Error(`the README's one-node commands failed: ${e.stdout}\n${e.stderr}`);
      });
      expect(run.stdout).toContain(`Leak audit of node ${worker}: `);
      // The run's own report, as printed: the versions, the teardown's sandboxes, the proof, the audit before uncordon.
      expect(run.stdout).toMatch(new RegExp(`Run on node ${worker}: upgraded \\(exit 0\\)`));
      expect(run.stdout).toContain(`containerd: ${old} -> ${target}`);
      expect(run.stdout).toMatch(/^ {2}teardown-sandboxes .* [1-9]\d* sandbox\(es\) removed/m);
      expect(run.stdout).toMatch(new RegExp(`^ {2}prove-node .*the node reports containerd://${target.split('~')[0]}`, 'm'));
      expect(run.stdout).toMatch(/^Leak audit: clean \(/m);
      expect(await containerd(worker)).toBe(`${target} hi`);
      const [exe, startedAfter] = await runningContainerd(worker);
      expect(exe).toBe('/usr/bin/containerd');
      expect(Number(startedAfter)).toBeGreaterThan(Number(startedBefore));
      const nodeInfo = JSON.parse(await kindKubectl('get', 'node', worker, '-o', 'json')).status.nodeInfo;
      expect(nodeInfo.containerRuntimeVersion).toBe(`containerd://${target.split('~')[0]}`);
    });
    await waitFor(webReady, 120_000, 'demo/web back at 6 ready pods');
  });

  it('the README\'s fleet quick start, run as written: pulumi up upgrades every worker through docker exec, leak-free, a second up changes nothing, and the README\'s way back takes the fleet back', async () => {
    const { workers } = kind();
    for (const w of workers) await resetWorker(w);
    const home = await runQuickStart(`pulumi stack output --json > "$HOME/outputs.json"\npulumi up --yes > "$HOME/again.txt"\n${readmeBlock('fleet-back')}`);
    const outputs = JSON.parse(readFileSync(join(home, 'outputs.json'), 'utf8'));
    for (const w of workers) expect(outputs.nodes[w]).toMatchObject({ result: 'upgraded', versionsAfter: { containerd: bed().containerd.new }, audit: { findings: 0 } });
    expect(readFileSync(join(home, 'again.txt'), 'utf8')).toMatch(new RegExp(`${workers.length + 1} unchanged`));
    // Then back to the old version by the README's way: new targets, pulumi up; held as before, leak-free.
    for (const w of workers) {
      expect(await containerd(w)).toBe(`${bed().containerd.old} hi`);
      const audit = await auditNode([w, '--output', 'json', ...access(w)]);
      expect(audit.code, audit.stdout).toBe(0);
    }
  });

  it('docker.io beside kubelet\'s containerd, socket-activated: the upgrade takes docker.socket down with dockerd, no client revives it mid-install, both come back', async () => {
    const node = kind().workers[1]!;
    const { old, new: target } = bed().docker;
    const status = async () => (await onNode(node, 'systemctl is-active docker.socket docker || true')).trim().split('\n');
    await onNode(node, `DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io='${old}' >/dev/null && apt-mark hold docker.io >/dev/null`);
    try {
      expect(await status()).toEqual(['active', 'active']);
      // The install's preinst waits 30 s: meanwhile a client (here docker info, in the runbook a state read) knocks.
      await onNode(node, `mkdir -p ${FAULTS_DIR} && touch ${FAULTS_DIR}/preinst-slow`);
      let probe: Promise<string[]> | undefined;
      const result = await upgradeNode([node, '--to', `docker.io=${target}`, '--output', 'json', ...DRAIN_FLAGS, ...access(node)], {
        onStderr: (text) => {
          if (probe || !text.includes(stepLine('upgrade-runtime'))) return;
          // Probed once the new preinst has started: dpkg is then inside its 30 s window, whatever the run took to get there.
          const unpacking = async () => (await onNode(node, `test -e ${FAULTS_DIR}/preinst-started && echo yes || true`)).trim() === 'yes';
          probe = waitFor(unpacking, 180_000, 'the new preinst to start').then(async () => [(await onNode(node, 'docker info >/dev/null 2>&1 && echo answered || echo refused')).trim(), ...(await status())]);
        },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(await probe).toEqual(['refused', 'inactive', 'inactive']);
      expect(await status()).toEqual(['active', 'active']);
      expect((await onNode(node, "dpkg-query -W -f='${Version} ${db:Status-Abbrev}' docker.io")).trim()).toBe(`${target} hi`);
    } finally {
      await onNode(node, `rm -rf ${FAULTS_DIR}; DEBIAN_FRONTEND=noninteractive apt-get purge -y -q --allow-change-held-packages docker.io >/dev/null`);
    }
  });

  it("the agent on a kind worker, installed and removed as the docs say (one command each): its image in the node's containerd, the audit and containerd's upgrade run as units of the node's systemd (the agent's own pod torn down and back), no docker exec; nothing of it left after", async () => {
    const worker = kind().workers[0]!;
    await resetWorker(worker);
    // A caller with the shipped requester's rights on kind, never its admin.
    const through = ['--via', 'agent', '--output', 'json', '--kubeconfig', await requesterKubeconfig(kindKubectl)];
    // No kube-proxy in the bed's kind either: the agent is told the control plane's own address.
    const api = (await kindKubectl('get', 'node', kind().controlPlane, '-o', 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')).trim();
    await withDocumentedInstall({ kubectl: kindKubectl, sh: onNode, apiEnv: { KUBERNETES_SERVICE_HOST: api, KUBERNETES_SERVICE_PORT: '6443' } }, [worker], kind().kubeconfig, async () => {
      const audit = await auditNode([worker, ...through]);
      expect(audit.code, audit.stderr).toBe(0);
      expect(JSON.parse(audit.stdout)).toMatchObject({ node: worker, verdict: 'clean' });
      const agentSandbox = async () => (await onNode(worker, 'crictl pods -q --state ready --namespace node-maint')).trim();
      const sandboxBefore = await agentSandbox();
      const run = await upgradeNode([worker, '--to', `containerd=${bed().containerd.new}`, ...DRAIN_FLAGS, ...through]);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ node: worker, result: 'upgraded', exitCode: 0, audit: { verdict: 'clean', findings: 0 } });
      // The runs were the node's own units (their output files are the agent's).
      expect(await onNode(worker, 'ls /var/lib/node-maint/agent/runs | grep -c "[.]out$"')).toMatch(/^[2-9]/);
      expect(await containerd(worker)).toBe(`${bed().containerd.new} hi`);
      expect(JSON.parse(await kindKubectl('get', 'node', worker, '-o', 'json')).spec.unschedulable).toBeUndefined();
      // The agent's own sandbox went with the others; kubelet made it a new one, in which the agent is back.
      expect(sandboxBefore).toMatch(/^[0-9a-f]+$/);
      await waitFor(async () => !['', sandboxBefore].includes(await agentSandbox()), 120_000, "the agent's pod in a new sandbox");
    });
  });
});
