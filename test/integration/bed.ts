import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import type { Cluster } from '../../src/cluster/api.js';
import { getJsonInProcess, kubectlInProcess } from './kubectl-in-process.js';
import { assertHeld, CLUSTER_IPAM } from './leases.js';

// Helpers over the local test cluster: its env, kubectl, the runbook CLI as a user runs it, and node fixtures.
const exec = promisify(execFile);

export type Flavour = 'docker' | 'containerd';
/** A pool node's network: its runtime's own (kubenet on docker, bridge + host-local on containerd), or Calico's. */
export type Network = 'default' | 'calico';

export interface Testbed {
  kubeconfig: string;
  sshKey: string;
  knownHosts: string;
  sshUser: string;
  bedDockerHost: string;
  kubectl: string;
  pulumiDir: string;
  /** @pulumi/kubernetes's resource plugin, built from Go modules (testbed/build/pulumi-kubernetes.sh). */
  pulumiKubernetes: { plugin: string; version: string };
  /** The bed's run directory (test leases live there). */
  run: string;
  /** faulty: the bed's +nmtest1, Debian's new version with fault hooks (testbed/packages/fault-hooks.sh). */
  containerd: { old: string; new: string; faulty: string };
  /** new: Debian's docker.io repacked as a higher version, with the same fault hooks. */
  docker: { old: string; new: string };
  /** The pool's real nodes (testbed/lib/pool.sh): containers on the bed's dockerd, leased by tests (pool.ts). */
  nodes: Array<{ name: string; flavour: Flavour; network: Network; sshPort: number; container: string }>;
  /** The bed's kind cluster (testbed/lib/kind.sh): its nodes are containers on the bed's dockerd. */
  kind: { name: string; kubeconfig: string; controlPlane: string; workers: string[]; bin: string } | null;
  /** The bed's Prometheus (testbed/lib/monitoring.sh), scraping node-exporter's textfile collector. */
  prometheus: string;
  /** node-exporter's textfile directory, on this machine and at the same path on every pool node. */
  textfileDir: string;
  /** cnitool (libcni's reference front end), copied onto a node to act as a CNI user that is not Kubernetes. */
  cnitool: string;
  /** The whereabouts IPAM plugin (testbed/build/whereabouts.sh), copied onto a node whose network test 27 makes use it. */
  whereabouts: string;
  /** Calico (testbed/lib/calico.sh): calicoctl, and the IPPool's CIDR the Calico nodes' pods get addresses from. */
  calico: { calicoctl: string; pool: string };
}

export const bed = (): Testbed => JSON.parse(inject('testbed')) as Testbed;

/** The bed's docker (the pool nodes' containers): its stdout, trimmed. */
export const bedDocker = (...args: string[]) => promisify(execFile)('docker', ['-H', bed().bedDockerHost, ...args]).then((r) => r.stdout.trim());

/** kubectl as the tests write it; its commonest writes are done in this process (kubectl-in-process.ts). */
export async function kubectl(...args: string[]): Promise<string> {
  const done = await kubectlInProcess(bedCluster, args);
  if (done !== undefined) return done;
  const b = bed();
  const { stdout } = await exec(b.kubectl, ['--kubeconfig', b.kubeconfig, ...args], { maxBuffer: 64 * 2 ** 20 });
  return stdout;
}

/** `kubectl ... -o json`; a plain `get` is answered in this process (getJsonInProcess). */
export async function kubectlJson<T = any>(...args: string[]): Promise<T> {
  const got = args[0] === 'get' ? await getJsonInProcess(bedCluster, args.slice(1)) : undefined;
  if (got !== undefined) return got as T;
  return JSON.parse(await kubectl(...args, '-o', 'json')) as T;
}

// The kinds the pool's resets name by path (objectPath): the API group's path, the plural, namespaced.
const RESOURCES: Record<string, [string, string, boolean]> = {
  node: ['/api/v1', 'nodes', false],
  pod: ['/api/v1', 'pods', true],
  lease: ['/apis/coordination.k8s.io/v1', 'leases', true],
  namespace: ['/api/v1', 'namespaces', false],
  serviceaccount: ['/api/v1', 'serviceaccounts', true],
  deployment: ['/apis/apps/v1', 'deployments', true],
  replicaset: ['/apis/apps/v1', 'replicasets', true],
  daemonset: ['/apis/apps/v1', 'daemonsets', true],
  statefulset: ['/apis/apps/v1', 'statefulsets', true],
  job: ['/apis/batch/v1', 'jobs', true],
  'blockaffinities.crd.projectcalico.org': ['/apis/crd.projectcalico.org/v1', 'blockaffinities', false],
  'ipamblocks.crd.projectcalico.org': ['/apis/crd.projectcalico.org/v1', 'ipamblocks', false],
};

/** The API path of a kind's objects (as kubectl names the kind), in one namespace; undefined for a kind not in RESOURCES. */
function collectionPath(resource: string, namespace: string): string | undefined {
  const known = RESOURCES[resource.replace(/s$/, '')] ?? RESOURCES[resource];
  if (!known) return undefined;
  const [group, plural, namespaced] = known;
  return `${group}${namespaced ? `/namespaces/${namespace}` : ''}/${plural}`;
}

let cluster: Promise<Cluster> | undefined;
/**
 * The runbook's own API client on the bed, as its admin, one per file: the suite polls the API thousands of times and
 * a kubectl costs a tenth of a CPU second (kubectl-in-process.ts).
 */
export function bedCluster(): Promise<Cluster> {
  cluster ??= import('../../src/cluster/api.js').then(({ Cluster }) => Cluster.connect({ kubeconfig: bed().kubeconfig }));
  return cluster;
}

/** One object's API path (namespace ignored for a cluster-wide kind); it throws for a kind not in RESOURCES. */
export function objectPath(resource: string, name: string, namespace = 'default'): string {
  const path = collectionPath(resource, namespace);
  if (!path) throw new Error(`objectPath: ${resource} is not in bed.ts's RESOURCES`);
  return `${path}/${encodeURIComponent(name)}`;
}

/**
 * `kubectl delete --ignore-not-found --wait=false` of one object through the bed's client (the suite's resets make
 * hundreds: a kubectl each costs a tenth of a CPU second): dependents removed in the background, as kubectl does.
 */
export async function deleteObject(path: string, gracePeriodSeconds?: number): Promise<void> {
  const api = await bedCluster();
  const options = { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', gracePeriodSeconds };
  await api.request('DELETE', path, options).catch((e: { status?: number }) => {
    if (e.status !== 404) throw e;
  });
}

/** Whether the object at `path` is there (a 404 says it is not; any other error is thrown). */
export async function exists(path: string): Promise<boolean> {
  const api = await bedCluster();
  return api.get(path, { retry: false }).then(
    () => true,
    (e: { status?: number }) => (e.status === 404 ? false : Promise.reject(e)),
  );
}

/** `kubectl patch --type merge` through the bed's client. */
export const mergePatchObject = async (path: string, patch: unknown) => void (await (await bedCluster()).mergePatch(path, patch));

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

export const DRAIN_FLAGS = ['--ignore-daemonsets', '--delete-emptydir-data', '--force', '--grace-period', '5'];

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** What a test may do to a running entry point: kill it (SIGKILL), or signal its process group as a terminal does. */
export interface Running {
  kill: () => void;
  /** The signal to the whole process group (Ctrl-C in a terminal sends SIGINT to all of it); when it was sent. */
  signal: (name: NodeJS.Signals) => void;
  /** The signal to the process the operator started alone (`kill PID`, a service manager's stop, `docker stop`). */
  signalStarted: (name: NodeJS.Signals) => void;
}

/**
 * Runs a runbook entry point as an operator would: zx, a child process in a process group of its own (as a shell's
 * job is), its exit code; a process ended by a signal reports 128 + the signal's number, as a shell does.
 */
export function runCli(script: string, args: string[], options: { onStderr?: (chunk: string, kill: () => void, running: Running) => void; via?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    // `via`: how the operator starts it (['npx', 'zx'], as the README's first examples do); zx itself by default.
    const [command, ...prefix] = options.via ?? ['node_modules/.bin/zx'];
    const child = spawn(command!, [...prefix, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...(options.env ? { env: { ...process.env, ...options.env } } : {}) });
    let stdout = '';
    let stderr = '';
    const running: Running = {
      kill: () => child.kill('SIGKILL'),
      signal: (name) => {
        try {
          process.kill(-child.pid!, name);
        } catch {
          // the group is gone already
        }
      },
      signalStarted: (name) => void child.kill(name),
    };
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      options.onStderr?.(stderr, running.kill, running);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 + (osConstants.signals[signal] ?? 0) : -1), stdout, stderr }));
  });
}

export const upgradeNode = (args: string[], options?: Parameters<typeof runCli>[2]) => runCli('runbooks/upgrade-node.mjs', args, options);

export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}


export function auditNode(args: string[], options?: Parameters<typeof runCli>[2]): Promise<CliResult> {
  const acrossTheCluster = args.includes('--reclaim') && args.includes('--cluster-wide');
  if (acrossTheCluster) assertHeld(CLUSTER_IPAM, 'a reclaim across the cluster');
  return runCli('runbooks/audit-node.mjs', args, options);
}

/** Applies objects given as plain values (kubectl apply of a List). */
export async function applyObjects(objects: unknown[], run: (...args: string[]) => Promise<string> = kubectl): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'node-maint-apply-')), 'objects.json');
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  try {
    return await run('apply', '-f', file);
  } finally {
    rmSync(dirname(file), { recursive: true, force: true });
  }
}

/** A kubeconfig for a ServiceAccount (a bound token, two hours), on the bed's apiserver (or `run`'s), in a directory of its own. */
export async function serviceAccountKubeconfig(namespace: string, name: string, run: (...args: string[]) => Promise<string> = kubectl): Promise<{ kubeconfig: string; token: string }> {
  const kubeconfig = join(mkdtempSync(join(tmpdir(), `node-maint-sa-${name}-`)), 'kubeconfig');
  if (run === kubectl) {
    // The bed's: a TokenRequest through the runbook's client, in this process.
    const api = await bedCluster();
    const { token } = await api.requestToken(namespace, name, { seconds: 7200 });
    writeFileSync(kubeconfig, api.kubeconfigAs(`${namespace}:${name}`, { token }));
    return { kubeconfig, token };
  }
  const token = (await run('-n', namespace, 'create', 'token', name, '--duration=2h')).trim();
  const admin = JSON.parse(await run('config', 'view', '--raw', '--minify', '-o', 'json'));
  writeFileSync(kubeconfig, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': name,
    clusters: [{ name: 'bed', cluster: admin.clusters[0].cluster }], users: [{ name: `${namespace}:${name}`, user: { token } }], contexts: [{ name, context: { cluster: 'bed', user: `${namespace}:${name}` } }],
  }));
  return { kubeconfig, token };
}
