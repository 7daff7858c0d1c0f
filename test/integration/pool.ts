import { execFile } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import ipaddr from 'ipaddr.js';
import lockfile from 'proper-lockfile';
import { afterAll, beforeAll, expect } from 'vitest';
import { bed, bedCluster, bedDocker, deleteObject, exists, kubectlJson, mergePatchObject, objectPath, waitFor, type Flavour, type Network } from './bed.js';
import { held } from './leases.js';

// Test files run side by side, each on nodes of its own: a file leases pool nodes (testbed/lib/pool.sh) for its whole
// run, and bed-wide things a test changes for a while (node IPAM held back, Calico objects) as named resources, under
// the bed's run directory; a lease of a process that is gone is free again.
const exec = promisify(execFile);

export interface TestNode {
  name: string;
  flavour: Flavour;
  network: Network;
  container: string;
  sshPort: number;
  /** The runbook's flags that reach it over SSH as the bed's non-root user. */
  flags: string[];
  /** The runbook's flags that reach it through `docker exec`, as on kind. */
  dockerExecFlags: string[];
  /** A root shell on the node. */
  sh(script: string): Promise<string>;
  /** Copies a file of this machine onto the node. */
  put(localPath: string, nodePath: string): Promise<void>;
  /** Back where every test starts (resetPoolNode). */
  reset(): Promise<void>;
  /** The bed holds the runtime packages, as production nodes do. */
  held: boolean;
}

const leaseDir = () => join(bed().run, 'test-leases');
const startTime = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[19];
  } catch {
    return undefined;
  }
};
const me = `${process.pid} ${startTime(process.pid)}`;

/**
 * Takes the lease on `name` if it is free; true when this process holds it. A lease is a lock directory
 * (proper-lockfile: made atomically, its mtime kept fresh while this process lives, taken over once it is 15 s stale,
 * removed when the process exits), beside a note of the file that holds it.
 */
async function tryLease(name: string, holder: string): Promise<boolean> {
  // Held by another case of this file (onLeasedNode).
  if (held.has(name)) return false;
  try {
    // One path per lease: proper-lockfile keeps its own state per locked path.
    const release = await lockfile.lock(join(leaseDir(), name), {
      realpath: false,
      stale: 15_000,
      update: 3_000,
      retries: 0,
      onCompromised: (e) => console.log(`lease ${name} lost: ${e.message}`),
    });
    held.set(name, release);
    writeFileSync(join(leaseDir(), `${name}.holder`), holder);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOCKED') return false;
    throw e;
  }
}

async function release(name: string): Promise<void> {
  const done = held.get(name);
  held.delete(name);
  await done?.().catch(() => undefined);
}

const holderOf = (name: string) => {
  if (!existsSync(join(leaseDir(), `${name}.lock`))) return '';
  try {
    return readFileSync(join(leaseDir(), `${name}.holder`), 'utf8').trim();
  } catch {
    return '?';
  }
};

/** A pool node's kind: its flavour on its runtime's own network, or a Calico node of that flavour. */
export type PoolKind = Flavour | `${Flavour}-calico`;
const kindOf = (n: { flavour: Flavour; network: Network }): PoolKind => (n.network === 'calico' ? `${n.flavour}-calico` : n.flavour);

/** What a file asks for: a node of a kind, a node of either flavour on its own network ('any': the test does not depend
 *  on the runtime), or a named resource of the bed ('resource:node-ipam'). */
export type Wanted = PoolKind | 'any' | `resource:${string}`;

/** The kinds of things a request competes for: 'any' competes for both flavours. */
const kinds = (wanted: Wanted[]) => [...new Set(wanted.flatMap((w) => (w === 'any' ? ['docker', 'containerd'] : [w])))];

let queued = 0;
let lastSaid = 0;
/** The queue entries of this process's waiters, taken out when it exits. */
const waiting = new Set<() => void>();
process.once('exit', () => waiting.forEach((leave) => leave()));

/**
 * The waiting line. Each waiter (a file, or one case of it) has an entry (when it came, its PID and start time, the
 * kinds it still wants); entries of processes that are gone do not count. The oldest waiter may take what it wants
 * piece by piece, as it frees up, and hold it; no other waiter takes anything of a kind the oldest still wants ('any'
 * takes the other flavour), and each of them takes all it wants at once or nothing. So a file that needs four nodes is
 * served in turn, waiters that need other kinds go on meanwhile, and no two hold parts of what the other waits for.
 */
function enqueue(): { head: () => { mine: boolean; wants: Set<string> }; update: (wanted: Wanted[]) => void; leave: () => void } {
  const dir = join(leaseDir(), 'queue');
  mkdirSync(dir, { recursive: true });
  const mine = `${String(Date.now()).padStart(15, '0')}-${process.pid}-${++queued}`;
  // Written whole and renamed into place: a reader never sees half an entry.
  const update = (wanted: Wanted[]) => {
    writeFileSync(join(dir, `.${mine}`), `${me} ${JSON.stringify(kinds(wanted))}\n`);
    renameSync(join(dir, `.${mine}`), join(dir, mine));
  };
  const leave = () => {
    rmSync(join(dir, mine), { force: true });
    waiting.delete(leave);
  };
  waiting.add(leave);
  const head = () => {
    for (const f of readdirSync(dir).filter((f) => !f.startsWith('.')).sort()) {
      let entry: string;
      try {
        entry = readFileSync(join(dir, f), 'utf8');
      } catch {
        continue;
      }
      const [pid, started, wants] = entry.trim().split(' ');
      if (startTime(Number(pid)) !== started) {
        rmSync(join(dir, f), { force: true });
        continue;
      }
      return { mine: f === mine, wants: new Set(JSON.parse(wants!) as string[]) };
    }
    return { mine: true, wants: new Set<string>() };
  };
  return { head, update, leave };
}

/**
 * Takes one thing of kind `want` that is free, of no kind in `barred`; its name, or undefined. 'any' takes the flavour
 * with more free.
 */
async function takeOne(want: Wanted, holder: string, taken: string[], barred = new Set<string>()): Promise<string | undefined> {
  if (barred.has(want)) return undefined;
  const free = (k: PoolKind) => bed().nodes.filter((n) => kindOf(n) === k && !taken.includes(n.name) && !holderOf(n.name)).length;
  const both: PoolKind[] = free('docker') >= free('containerd') ? ['docker', 'containerd'] : ['containerd', 'docker'];
  const kinds = want === 'any' ? both.filter((k) => !barred.has(k)) : [want as PoolKind];
  const candidates = want.startsWith('resource:') ? [want] : kinds.flatMap((k) => bed().nodes.filter((n) => kindOf(n) === k).map((n) => n.name));
  for (const c of candidates) if (!taken.includes(c) && (await tryLease(c, holder))) return c;
  return undefined;
}

/**
 * Leases all of `wanted` (pool nodes by flavour, resources by name) for this file, in turn with the files that asked
 * before (enqueue). Waits while they are taken. 'any' is taken last. The names come back in the order asked for.
 */
async function leaseAll(wanted: Wanted[], holder: string): Promise<string[]> {
  mkdirSync(leaseDir(), { recursive: true });
  const t0 = Date.now();
  const order = [...wanted.filter((w) => w !== 'any'), ...wanted.filter((w) => w === 'any')];
  const got: Array<string | undefined> = order.map(() => undefined);
  const remaining = () => order.filter((_, i) => !got[i]);
  const queue = enqueue();
  queue.update(remaining());
  for (;;) {
    const head = queue.head();
    if (head.mine) {
      // The oldest waiter keeps what it gets.
      for (const [i, w] of order.entries()) got[i] ??= await takeOne(w, holder, got.filter(Boolean) as string[]);
      queue.update(remaining());
    } else {
      // All at once or nothing, and nothing of a kind the oldest waiter still wants ('any' of the other flavour).
      const taken: string[] = [];
      for (const w of order) {
        const one = await takeOne(w, holder, taken, head.wants);
        if (!one) break;
        taken.push(one);
      }
      if (taken.length === order.length) taken.forEach((one, i) => (got[i] = one));
      else await Promise.all(taken.map(release));
    }
    if (got.every(Boolean)) {
      queue.leave();
      timeline('took', holder, got as string[], Date.now() - t0);
      let named = 0;
      let any = order.indexOf('any');
      return wanted.map((w) => got[w === 'any' ? any++ : named++]!);
    }
    // Once a minute per file, however many of its cases wait.
    if (Date.now() - lastSaid > 60_000) {
      lastSaid = Date.now();
      const who = [...new Set(bed().nodes.map((n) => n.name).concat(wanted.filter((w) => w.startsWith('resource:'))))].map((n) => `${n}: ${holderOf(n) || 'free'}`);
      console.log(`${holder}: waiting ${Math.round((Date.now() - t0) / 1000)} s for ${wanted.join(', ')}, holding ${got.filter(Boolean).join(', ') || 'nothing'} (${who.join('; ')})`);
    }
    await new Promise((r) => setTimeout(r, 500 + Math.random() * 1000));
  }
}

/** One line per lease taken or freed, for a look at how busy the pool was (test-leases/timeline under the bed's run). */
function timeline(what: 'took' | 'freed', holder: string, names: string[], waitedMs = 0): void {
  appendFileSync(join(leaseDir(), 'timeline'), `${new Date().toISOString()} ${what} ${holder} ${names.join(',')}${what === 'took' ? ` after ${Math.round(waitedMs / 1000)}s` : ''}\n`);
}

/** The file that called: lease holders and namespaces are named after it. */
function callerFile(): string {
  const line = (new Error().stack ?? '').split('\n').find((l) => /\.test\.ts/.test(l)) ?? '';
  return basename(/\(?(?:file:\/\/)?([^():]+\.test\.ts)/.exec(line)?.[1] ?? 'unknown.test.ts');
}

/** The namespace of a test file's own (useNamespace): t13 for 13-runbook-upgrade.test.ts. */
const namespaceOf = (file: string) => `t${file.replace(/^(\d+)-.*$/, '$1')}`;

/** A node of the pool as the tests reach it, once leased; its reset leaves the pods of the file's own namespace be. */
export function poolNode(name: string, ownNamespace = ''): TestNode {
  const b = bed();
  const n = b.nodes.find((x) => x.name === name);
  if (!n) throw new Error(`no pool node ${name} (testbed/env lists them)`);
  const t: TestNode = {
    name,
    flavour: n.flavour,
    network: n.network,
    container: n.container,
    sshPort: n.sshPort,
    flags: ['--kubeconfig', b.kubeconfig, '--ssh-host', '127.0.0.1', '--ssh-port', String(n.sshPort), '--ssh-user', b.sshUser, '--ssh-key', b.sshKey, '--known-hosts', b.knownHosts],
    dockerExecFlags: ['--kubeconfig', b.kubeconfig, '--transport', 'docker-exec', '--container', n.container, '--docker-host', b.bedDockerHost],
    sh: (script) => onNode(n.container, script),
    put: async (localPath, nodePath) => void (await exec('docker', ['-H', b.bedDockerHost, 'cp', localPath, `${n.container}:${nodePath}`])),
    reset: () => resetPoolNode(t, ownNamespace),
    held: true,
  };
  return t;
}

/** A node container's init process and environment, read once per container start (it changes when it is recreated). */
const nodeProcesses = new Map<string, { pid: number; id: string; env: string[] }>();

async function nodeProcess(container: string): Promise<{ pid: number; id: string; env: string[] }> {
  const known = nodeProcesses.get(container);
  if (known && readFileSafe(`/proc/${known.pid}/cgroup`).includes(known.id)) return known;
  const { stdout } = await exec('docker', ['-H', bed().bedDockerHost, 'inspect', '-f', '{{.State.Pid}} {{.Id}} {{.Config.Hostname}} {{json .Config.Env}}', container]);
  const [pid, id, hostname, ...env] = stdout.trim().split(' ');
  if (pid === '0') throw new Error(`on ${container}: the container is not running`);
  // As docker exec makes it: its default PATH unless the image sets one (the pool's does not: dpkg refuses to run without).
  const found = { pid: Number(pid), id, env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', ...(JSON.parse(env.join(' ')) as string[]), `HOSTNAME=${hostname}`, 'HOME=/root'] };
  nodeProcesses.set(container, found);
  return found;
}

const readFileSafe = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

/**
 * nsenter, which forks into the node's PID namespace, stops itself when its child is stopped and waits for a shell's
 * job control to continue it (util-linux's continue_as_child). A node's shutdown stops every process of the node
 * (systemd-shutdown: kill(-1, SIGSTOP), then SIGTERM and SIGCONT): the child dies, but nsenter, stopped, never reaps it,
 * and the node's PID namespace, its reboot with it, cannot end until nsenter is killed. Continued here as a shell would.
 */
function resumeWhenStopped(pid: number | undefined): NodeJS.Timeout {
  return setInterval(() => {
    if (pid && /^\d+ \(.*\) T /.test(readFileSafe(`/proc/${pid}/stat`))) process.kill(pid, 'SIGCONT');
  }, 1000).unref();
}

/** Longer than anything a test runs in a node (the pool's reset waits up to 600 s for an apt a killed run left). */
const ON_NODE_TIMEOUT_MS = 900_000;

/**
 * Runs a script as root in the node, as `docker exec` would, but by entering its namespaces (nsenter): a `docker exec`
 * costs ~190 ms of CPU (dockerd, containerd, a shim, runc), nsenter ~9 ms, and the tests run thousands. The script's
 * processes live in the node's namespaces (they end with it) but are accounted to the test's cgroup.
 */
export async function onNode(container: string, script: string, entered = false): Promise<string> {
  try {
    const { pid, env } = await nodeProcess(container);
    // Bounded: a script that never ends fails the test that meets it, instead of hanging it to its timeout.
    const entering = exec('nsenter', ['-t', String(pid), '-a', '--', 'env', '-i', ...env, 'bash', '-c', script], { maxBuffer: 64 * 2 ** 20, timeout: ON_NODE_TIMEOUT_MS, killSignal: 'SIGKILL' });
    const resuming = resumeWhenStopped(entering.child.pid);
    try {
      return (await entering).stdout;
    } finally {
      clearInterval(resuming);
    }
  } catch (e) {
    const { code, stderr, killed } = e as { code?: number; stderr?: string; killed?: boolean };
    // The container started again (a reboot) between the check of its PID and nsenter: once more, on its new PID.
    if (!entered && /cannot open \/proc\/\d+\/ns\//.test(stderr ?? '')) {
      nodeProcesses.delete(container);
      return onNode(container, script, true);
    }
    const first = script.trim().split('\n')[0];
    const how = killed ? `did not end within ${ON_NODE_TIMEOUT_MS / 1000}s` : `exited ${code}`;
    throw new Error(`on ${container}: \`${first}${script.trim().includes('\n') ? ' ...' : ''}\` ${how}: ${stderr?.trim() || '(no error output)'}`);
  }
}

/**
 * Leases pool nodes for this file (one per flavour named, in that order) and the named resources, each node reset, for
 * the file's whole run. The handles can be taken at module level and are usable once the file's beforeAll ran.
 */
export function useNodes(...wanted: Wanted[]): TestNode[] {
  const file = callerFile();
  const leased: TestNode[] = [];
  let mine: string[] = [];
  beforeAll(async () => {
    mine = await leaseAll(wanted, file);
    const nodes = mine.filter((h) => !h.startsWith('resource:')).map((n) => poolNode(n, namespaceOf(file)));
    await Promise.all(nodes.map((n) => n.reset()));
    leased.push(...nodes);
  }, 1_800_000);
  // (Also released when the process exits, whatever hook failed before this one.)
  afterAll(async () => {
    await Promise.all(mine.map(release));
    timeline('freed', file, mine);
  });
  const handle = (i: number): TestNode =>
    new Proxy({} as TestNode, {
      get: (_target, key) => {
        const node = leased[i];
        if (!node) throw new Error(`${file}: pool node ${i} used before its lease (use it inside a test or hook)`);
        return node[key as keyof TestNode];
      },
    });
  return wanted.filter((w) => !w.startsWith('resource:')).map((_, i) => handle(i));
}

/**
 * A case that needs a node only while it runs (an it.concurrent of a file with many cases): leases one of `wanted`, in
 * turn with every file's leases, resets it, runs the case on it and frees it. A file's cases so spread over as many
 * nodes as are free, and no node is held idle for a file's later cases.
 */
export function onLeasedNode(wanted: PoolKind | 'any', fn: (t: TestNode) => Promise<void>, ...resources: Array<`resource:${string}`>): () => Promise<void> {
  const file = callerFile();
  return async () => {
    const [name, ...extra] = await leaseAll([wanted, ...resources], file);
    const t = poolNode(name!, namespaceOf(file));
    try {
      await t.reset();
      await fn(t);
    } finally {
      // Else the next file's reset would find them, as another file's leftovers.
      await removeOwnPods(t, namespaceOf(file)).catch((e) => console.log(`${file}: ${(e as Error).message}`));
      await Promise.all([name!, ...extra].map(release));
      timeline('freed', file, [name!, ...extra]);
    }
  };
}

/** A pod deleted, finalizers and all, and with it (withController) the Deployment, ReplicaSet or other that makes it. */
async function removePod(pod: any, withController: boolean): Promise<void> {
  const ns: string = pod.metadata.namespace;
  const owner = pod.metadata.ownerReferences?.find((o: any) => o.controller);
  if (withController && owner) {
    const rs = owner.kind === 'ReplicaSet' ? await kubectlJson('get', 'rs', '-n', ns, owner.name).catch(() => undefined) : undefined;
    const top = rs?.metadata.ownerReferences?.find((o: any) => o.controller) ?? owner;
    await deleteObject(objectPath(top.kind.toLowerCase(), top.name, ns)).catch(() => undefined);
  }
  const path = objectPath('pod', pod.metadata.name, ns);
  if (pod.metadata.finalizers?.length) await mergePatchObject(path, { metadata: { finalizers: null } }).catch(() => undefined);
  // A second of grace: no test needs its pods' graceful stop once it ended.
  await deleteObject(path, 1).catch(() => undefined);
}

const pinnedTo = (pod: any, node: string) => pod.spec.nodeSelector?.['kubernetes.io/hostname'] === node;

/** A case's own pods off its node before the node is freed for another file: their controllers too. */
async function removeOwnPods(t: TestNode, namespace: string): Promise<void> {
  // Pending ones too: a pod pinned to a node left cordoned is bound only once the next case uncordons it.
  const left = async () => (await kubectlJson('get', 'pods', '-n', namespace)).items.filter((p: any) => p.spec.nodeName === t.name || pinnedTo(p, t.name));
  let there = '';
  await waitFor(async () => {
    const pods = await left();
    there = pods.map((p: any) => `${p.metadata.name} ${p.status.phase}${p.metadata.deletionTimestamp ? ' terminating' : ''}`).join(', ');
    // Each time round: a ReplicaSet not yet collected after its Deployment went makes a new pod for the one deleted.
    for (const pod of pods) if (!pod.metadata.deletionTimestamp) await removePod(pod, true);
    return pods.length === 0;
  }, 180_000, `the pods of ${namespace} off ${t.name}`).catch((e: Error) => {
    throw new Error(`${e.message} (there: ${there})`);
  });
}

/**
 * What an earlier file left on the node (its run killed, or its cleanup failed): the controller of each such pod goes
 * (so it stops making the pod again), not its namespace (the file may still run, on other nodes); a pod of this
 * file's own namespace goes itself (with its controller when it is pinned to this node: an earlier case's), and so
 * does one of the cluster's namespaces (a smoke pod of a killed run).
 * Says whether the bed's node agent alone is left, running, and what is there.
 */
async function removeLeftoverPods(t: TestNode, ownNamespace: string): Promise<{ agentOnly: boolean; there: string }> {
  const pods = (await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${t.name}`)).items;
  for (const pod of pods) {
    if (pod.metadata.namespace === 'testbed-system' || (pod.metadata.deletionTimestamp && !pod.metadata.finalizers?.length)) continue;
    // An earlier case's pod pinned here goes with its controller too: no case elsewhere uses it.
    const earlierCase = pod.metadata.namespace === ownNamespace && pinnedTo(pod, t.name);
    await removePod(pod, earlierCase || !['default', 'kube-system', ownNamespace].includes(pod.metadata.namespace));
  }
  const [agent] = pods;
  return {
    agentOnly: pods.length === 1 && agent.metadata.namespace === 'testbed-system' && agent.status.phase === 'Running' && !agent.metadata.deletionTimestamp,
    there: pods.map((p: any) => `${p.metadata.namespace}/${p.metadata.name} ${p.status.phase}${p.metadata.deletionTimestamp ? ' terminating' : ''}`).join(', '),
  };
}

/**
 * A pool node put back where every test starts: the runtime packages at the bed's old versions and held, dpkg sound,
 * no fault switched on, every unit running, kubelet Ready (as posted after any restart), schedulable, no runbook
 * Lease and no marks, nothing on it but the bed's DaemonSet pod, no sandbox but live ones, no reservation but theirs.
 * A node that cannot be put back (a test left it broken) is replaced by a new container, as a node is re-imaged.
 */
export async function resetPoolNode(t: TestNode, ownNamespace = ''): Promise<void> {
  try {
    await tidyPoolNode(t, ownNamespace);
  } catch (e) {
    console.log(`${t.name}: could not be put back (${(e as Error).message}): replacing its container`);
    await exec('bash', ['testbed/ctl', 'recreate-node', t.name]);
    await tidyPoolNode(t, ownNamespace);
  }
}

/**
 * A runc killed mid-change (a test kills the runtime) can leave a cgroup in the node frozen: its processes then ignore
 * every signal, and a reboot of the node hangs (systemd cannot end them). Thawed from the host, as the bed's
 * remove_pool_container does (cgroup v1's freezer, v2's cgroup.freeze).
 */
async function thawFrozenCgroups(t: TestNode): Promise<void> {
  const id = await bedDocker('inspect', '-f', '{{.Id}}', t.container);
  const { stdout } = await exec('bash', ['-c', `find /sys/fs/cgroup -path '*${id}*' \\( -name freezer.state -o -name cgroup.freeze \\) 2>/dev/null | while read -r f; do
    s=$(cat "$f" 2>/dev/null) || continue
    case "$s" in THAWED|0) ;; FROZEN|FREEZING) echo THAWED 2>/dev/null > "$f" && echo "$f" ;; *) echo 0 2>/dev/null > "$f" && echo "$f" ;; esac
  done; true`]);
  if (stdout.trim()) console.log(`${t.name}: thawed what a killed runc left frozen: ${stdout.trim().split('\n').join(', ')}`);
}

async function tidyPoolNode(t: TestNode, ownNamespace: string): Promise<void> {
  await thawFrozenCgroups(t);
  const b = bed();
  const versions: Record<string, string> = t.flavour === 'docker' ? { containerd: b.containerd.old, 'docker.io': b.docker.old } : { containerd: b.containerd.old };
  const units = t.flavour === 'docker' ? 'containerd docker cri-docker kubelet' : 'containerd kubelet';
  // Prints the node's clock when it (re)starts kubelet: until kubelet posts, the node shows the Ready it had before.
  const restartedAt = await t.sh(`
    set -e
    # kubelet started with a test's extra flags (kubelet-with-faults) starts again without them.
    if [ -f /run/node-maint-test-faults/kubelet-extra-args ]; then rm -f /run/node-maint-test-faults/kubelet-extra-args; date +%s; systemctl restart kubelet; fi
    # A tool a test set aside (test 45: apt-get, crictl) and could not put back, its run killed: back in place.
    for f in /usr/bin/*.nm-test-aside /usr/local/bin/*.nm-test-aside; do [ -e "$f" ] && mv -f "$f" "\${f%.nm-test-aside}"; done
    rm -rf /etc/apt/apt.conf.d/99node-maint-test-fail /run/node-maint-test-faults /run/node-maint-test-hooks.log /run/cni-ipam-state
    # A reboot sentinel a test left (test 38's skipped node keeps its own): no later test finds a reboot due.
    rm -f /run/reboot-required /run/reboot-required.pkgs
    # .debs a killed run kept (about 100 MB each): an aging bed fills with them otherwise.
    rm -rf /var/lib/node-maint/backups/*/debs
    find /etc/cni/net.d -type f ! -name 10-containerd-net.conflist ! -name 10-calico.conflist ! -name calico-kubeconfig -delete
    # apt's source made to drop a version (test 50): the bed's repository again.
    if [ "$(cat /etc/apt/sources.list)" != 'deb [trusted=yes] file:/srv/debs ./' ] || ls /etc/apt/sources.list.d/nm-test-* >/dev/null 2>&1; then
      echo 'deb [trusted=yes] file:/srv/debs ./' > /etc/apt/sources.list; rm -rf /etc/apt/sources.list.d/nm-test-* /srv/nm-test-*; apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null
    fi
    # kubelet under a unit of another name (test 15): back under kubelet.service.
    if [ -f /etc/systemd/system/kubelet-custom.service ]; then systemctl stop kubelet-custom; rm -f /etc/systemd/system/kubelet-custom.service; systemctl daemon-reload; fi
    # sshd held at boot by a case that failed before it let go (sshdHeldAtBoot): let go, and up before the next file.
    if [ -e /var/lib/node-maint-test-sshd-gate ]; then rm -f /var/lib/node-maint-test-sshd-gate; systemctl start ssh; fi
    if ls /etc/systemd/system/*.d/90-node-maint-test.conf >/dev/null 2>&1; then rm -f /etc/systemd/system/*.d/90-node-maint-test.conf; systemctl daemon-reload; systemctl restart containerd; fi
    # A run the agent started that a failed case left (stopped, or failed), and a test's watcher still looping.
    pkill -f '[n]ode-maint-test-install-under-kubelet' || true
    systemctl stop 'node-maint-run-*' 2>/dev/null || true; systemctl reset-failed 'node-maint-run-*' 2>/dev/null || true
    # An apt of a run killed meanwhile may still be at work (a run's commands finish on the node): waited for.
    for _ in $(seq 300); do pgrep -x apt-get >/dev/null || pgrep -x dpkg >/dev/null || break; sleep 1; done
    dpkg --configure -a >/dev/null 2>&1 || true
    [ "$(systemctl is-active kubelet)" = active ] || date +%s
    # Only the packages not at their version and sound are installed (a reinstall of the others would restart their
    # daemons); all of them held.
    change=""; reinstall=""
    for p in ${Object.entries(versions).map(([p, v]) => `${p}=${v}`).join(' ')}; do
      case "$(dpkg-query -W -f='\${Version} \${db:Status-Abbrev}' "\${p%%=*}")" in
        "\${p#*=} hi "|"\${p#*=} ii ") ;;
        "\${p#*=} "*) change="$change $p"; reinstall=--reinstall ;;
        *) change="$change $p" ;;
      esac
    done
    if [ -n "$change" ]; then
      date +%s; systemctl stop kubelet
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q $reinstall --allow-downgrades --allow-change-held-packages -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confold $change >/dev/null
    fi
    apt-mark hold ${Object.keys(versions).join(' ')} >/dev/null
    # Units a case killed mid-way left disabled (crashAndCleanUp, withoutSsh): enabled, or the node's next boot starts none.
    # One at a time: is-enabled of several units says 0 when any one of them is enabled.
    for u in ${units} ssh; do systemctl is-enabled -q "$u" || systemctl enable -q "$u"; done
    systemctl start ${units} ssh`);
  // Calico records a test made for the node (its run killed before it removed them) would be leaks of this node. A
  // Calico node's own blocks are calico-ipam's: its tests release what they leak.
  for (const kind of t.network === 'calico' ? [] : ['blockaffinities', 'ipamblocks']) {
    for (const o of (await kubectlJson('get', `${kind}.crd.projectcalico.org`)).items) {
      if (o.spec.node === t.name || o.spec.affinity === `host:${t.name}`) await deleteObject(objectPath(`${kind}.crd.projectcalico.org`, o.metadata.name));
    }
  }
  const node = await kubectlJson('get', 'node', t.name);
  const marks = Object.keys(node.metadata.labels ?? {})
    .filter((k) => (k.startsWith('node-maint.io/') && !['node-maint.io/testbed', 'node-maint.io/flavour', 'node-maint.io/network'].includes(k)) || k === 'node-role.kubernetes.io/control-plane');
  const notes = Object.keys(node.metadata.annotations ?? {}).filter((k) => k.startsWith('node-maint.io/'));
  // A fleet's waiting taint a killed `pulumi up` left (whatever its stack); a merge patch sets the list whole, as kubectl taint does.
  const taints: any[] = node.spec.taints ?? [];
  const kept = taints.filter((x) => x.key !== 'node-maint.io/waiting');
  const unset = (keys: string[]) => (keys.length ? Object.fromEntries(keys.map((k) => [k, null])) : undefined);
  const patch = {
    metadata: { labels: unset(marks), annotations: unset(notes) },
    spec: { unschedulable: node.spec.unschedulable ? null : undefined, taints: kept.length < taints.length ? kept : undefined },
  };
  if (marks.length || notes.length || node.spec.unschedulable || kept.length < taints.length) await mergePatchObject(objectPath('node', t.name), patch);
  await deleteObject(objectPath('lease', `node-maint-${t.name}`, 'kube-system'));
  const since = Number(restartedAt.trim().split('\n')[0] || 0) * 1000;
  await waitFor(async () => {
    const n = await kubectlJson('get', 'node', t.name);
    const ready = n.status.conditions.find((c: any) => c.type === 'Ready');
    return ready?.status === 'True' && Date.parse(ready.lastHeartbeatTime ?? '') >= since && Boolean(n.spec.podCIDR);
  }, 180_000, `${t.name} Ready (posted by its running kubelet)`);
  // Removed again while waiting: a controller not yet gone (its deletion is collected in the background) makes its pod anew.
  let there = '';
  await waitFor(async () => {
    const left = await removeLeftoverPods(t, ownNamespace);
    there = left.there;
    return left.agentOnly;
  }, 240_000, `nothing on ${t.name} but the bed's node agent, running`).catch((e: Error) => {
    throw new Error(`${e.message} (there: ${there || 'nothing'})`);
  });
  // What kubelet's garbage collection would remove within a minute (dead sandboxes of replaced pods), removed now,
  // so that a test comparing the node before and after sees only its own doing.
  await waitFor(async () => {
    const [dead] = (await t.sh('crictl pods --state notready -q | xargs -r crictl rmp >/dev/null 2>&1; crictl pods --state notready -q | wc -l')).trim().split('\n');
    return dead === '0';
  }, 120_000, `only live sandboxes on ${t.name}`);
  // Reservations and CNI cache entries no live sandbox owns (a test's leak its cleanup missed): removed, when a second
  // look a few seconds later finds them too (a sandbox being made meanwhile owns its own). kubenet's bridge on another
  // range than the node's PodCIDR (its Node object made again with another range) a reset cannot mend: replaced.
  const look = async () => {
    const out = await t.sh(`
      live=$(crictl pods -q --no-trunc)
      for f in /var/lib/cni/networks/*/[0-9]*; do
        [ -f "$f" ] || continue
        case "$live" in *"$(head -n1 "$f" | tr -d '\\r')"*) ;; *) echo "stale $f" ;; esac
      done
      for f in /var/lib/cni/results/* /var/lib/cni/cache/results/*; do
        [ -f "$f" ] || continue
        case "$live" in *"$(basename "$f" | sed -E 's/-[^-]+$//' | grep -oE '[0-9a-f]{64}$')"*) ;; *) echo "stale $f" ;; esac
      done
      ip -4 -o addr show dev cbr0 2>/dev/null | awk '{print "cbr0 " $4}'`);
    return { stale: [...out.matchAll(/^stale (\S+)$/gm)].map((m) => m[1]!), cbr0: /^cbr0 (\S+)$/m.exec(out)?.[1] };
  };
  const first = await look();
  const cidr: string = (await kubectlJson('get', 'node', t.name)).spec.podCIDR;
  if (first.cbr0 && !ipaddr.parse(first.cbr0.split('/')[0]!).match(ipaddr.parseCIDR(cidr))) throw new Error(`cbr0 is ${first.cbr0}, the node's PodCIDR ${cidr}`);
  if (first.stale.length) {
    await new Promise((r) => setTimeout(r, 3000));
    const stale = (await look()).stale.filter((f) => first.stale.includes(f));
    if (stale.length) {
      await t.sh(`rm -f ${stale.join(' ')}`);
      console.log(`${t.name}: removed what no live sandbox owns (a test left it): ${stale.join(', ')}`);
    }
  }
  // Addresses calico-ipam still holds in a Calico node's blocks for pods that are gone (a test's crash its cleanup
  // missed): released as the stale reservations above are, each only while its slot holds what was judged.
  if (t.network === 'calico') {
    const [{ calicoFindings }, { releaseCalico }, api] = await Promise.all([import('../../src/leaks/calico/index.js'), import('../../src/leaks/calico/release.js'), bedCluster()]);
    const leaked = (await calicoFindings(api, t.name))?.node.filter((f) => f.class === 'calico-ip-leaked') ?? [];
    if (leaked.length) {
      const outcomes = await releaseCalico(api, leaked);
      console.log(`${t.name}: released what calico-ipam held for gone pods (a test left it): ${outcomes.map((o) => `${o.finding.evidence.ip} ${o.verdict}`).join(', ')}`);
    }
  }
  expect((await t.sh('systemctl is-active kubelet || true')).trim()).toBe('active');
}

/**
 * A namespace of the file's own, made afresh before its tests and deleted after them: two files never share a pod
 * name, and what a file leaves behind goes with its namespace.
 */
export function useNamespace(): { name: string } {
  const ns = { name: namespaceOf(callerFile()) };
  beforeAll(async () => {
    const path = objectPath('namespace', ns.name);
    await deleteObject(path);
    await waitFor(async () => !(await exists(path)), 300_000, `namespace ${ns.name} gone`);
    await (await bedCluster()).request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns.name } });
    await waitFor(() => exists(objectPath('serviceaccount', 'default', ns.name)), 60_000, `namespace ${ns.name} ready`);
  }, 600_000);
  afterAll(() => deleteObject(objectPath('namespace', ns.name)));
  return ns;
}
