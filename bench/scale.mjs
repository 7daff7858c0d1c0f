// Benchmark: the leak audit of one real node of the test bed while the cluster holds 5,000, then 50,000 pods on 1,000
// API-only kwok nodes, with Calico's IPAM for every pod (bench/ipam-scale.mjs) and whereabouts pools: the node's audit
// (its own IPAM) against the cluster-wide one (--cluster-wide: the whole IPAM and every pod, what every audit read
// before), time, peak memory and API bytes at both sizes; what a node on a whereabouts range reads; then the audit
// against a cluster-wide pod list with kubectl, in pages and in one answer, in the same run.
// Needs the test bed, and no `npm test` beside it (the pods load the bed's one apiserver). Removes what it made.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Cluster } from '../dist/cluster/api.js';
import { median } from './bench-node.mjs';
import { bedHandles, ipamKeyPrefixes, podAddress, poolRange, POOL_SIZE, putBackHandles, writeCalico, writeWhereabouts } from './ipam-scale.mjs';

const NODES = Number(process.env.BENCH_NODES ?? 1000);
const PODS = Number(process.env.BENCH_PODS ?? 50_000);
const RUNS = 3;
// How long to wait for kwok to report the pods Running (BENCH_SCALE_WAIT_S, 300 s).
const WAIT_MS = Number(process.env.BENCH_SCALE_WAIT_S ?? 300) * 1000;
const NAMESPACE = 'bench-scale';
const env = JSON.parse(readFileSync('/var/lib/node-maint-testbed/env.json', 'utf8'));
const node = env.nodes.find((n) => n.flavour === 'docker');
const access = ['--kubeconfig', env.kubeconfig, '--ssh-host', '127.0.0.1', '--ssh-port', String(node.sshPort), '--ssh-user', env.sshUser, '--ssh-key', env.sshKey, '--known-hosts', env.knownHosts];
const kubectl = (...args) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
const seconds = (ms) => (ms / 1000).toFixed(2);
const mib = (bytes) => (bytes / 2 ** 20).toFixed(0);

/** `command` under GNU time: its wall time (ms), peak RSS (MiB), exit code and stdout. */
function timed(command, args) {
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '@@time %M', command, ...args], { encoding: 'utf8', maxBuffer: 4096 * 2 ** 20 });
  const ms = performance.now() - t0;
  const rss = /@@time (\d+)\s*$/.exec(r.stderr ?? '');
  if (!rss) throw new Error(`${command} ${args[0]}: no figures from /usr/bin/time (${(r.stderr ?? String(r.error)).slice(-300)})`);
  return { ms, rssMiB: Number(rss[1]) / 1024, code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const kib = (bytes) => (bytes / 1024).toFixed(0);

/** The node's audit, the cluster-wide one and a whereabouts node's read, RUNS times each: medians, API requests and bytes. */
function measureIpam() {
  const audit = (...extra) => {
    let api;
    const figures = medians(() => {
      const r = timed('node', ['runbooks/audit-node.mjs', node.name, '--output', 'json', ...extra, ...access]);
      if (![0, 13].includes(r.code)) throw new Error(`audit-node ${extra.join(' ')} exited ${r.code}: ${r.stderr.slice(-500)}`);
      api = JSON.parse(r.stdout).api;
      return r;
    });
    return { ...figures, requests: api.requestsSent ?? api.requests, bytes: api.bytesRead };
  };
  let read;
  const pools = medians(() => {
    const r = timed('node', ['bench/whereabouts-read.mjs', poolRange(0)]);
    if (r.code !== 0) throw new Error(`whereabouts read exited ${r.code}: ${r.stderr.slice(-500)}`);
    read = JSON.parse(r.stdout);
    return { ms: read.ms, rssMiB: r.rssMiB };
  });
  return { own: audit(), whole: audit('--cluster-wide'), pools: { ...pools, requests: read.requests, bytes: read.bytesRead, allocations: read.allocations } };
}

/** Runs `fn` RUNS times: the median of each figure, and the runs' times. */
function medians(fn) {
  const runs = Array.from({ length: RUNS }, fn);
  const pick = (key) => median(runs.map((r) => r[key]));
  return { ms: pick('ms'), rssMiB: pick('rssMiB'), times: runs.map((r) => seconds(r.ms)).join(', ') };
}

const podName = (i) => `scale-${String(i).padStart(6, '0')}`;
const kwokNode = (n) => `kwok-${String(n + 1).padStart(4, '0')}`;

/** 50 pods per API-only node, each with a label set, a container with env and requests, and an IP kwok reports. */
const pod = (i) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: podName(i),
    namespace: NAMESPACE,
    labels: { app: `app-${i % 200}`, tier: 'web', 'node-maint.io/bench-pod': 'scale' },
    annotations: { 'testbed.node-maint.io/ip': podAddress(i % NODES, Math.floor(i / NODES)) },
  },
  spec: {
    nodeName: kwokNode(i % NODES),
    tolerations: [{ operator: 'Exists' }],
    containers: [{ name: 'app', image: 'registry.example/app:1.0', ports: [{ containerPort: 8080 }], env: [{ name: 'MODE', value: 'production' }], resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
  },
});

/** Creates `count` objects with `concurrency` requests in flight. */
async function createAll(cluster, count, concurrency, from = 0) {
  let next = from;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await cluster.request('POST', `/api/v1/namespaces/${NAMESPACE}/pods`, pod(i)).catch((e) => {
        if (e.status !== 409) throw e;
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

const cluster = await Cluster.connect({ kubeconfig: env.kubeconfig });
let t0 = performance.now();
execFileSync('bash', ['testbed/up', '--kwok-only', String(NODES)], { stdio: ['ignore', 'ignore', 'inherit'] });
console.log(`registered ${NODES} API-only kwok nodes in ${seconds(performance.now() - t0)} s`);
try {
  // Pods a run stopped before its clean-up made are used again (making 50,000 takes minutes on 2 cores).
  const count = (...selector) => kubectl('get', 'pods', '-n', NAMESPACE, ...selector, '-o', 'name', '--chunk-size', '5000').split('\n').filter(Boolean).length;
  await cluster.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }).catch((e) => {
    if (e.status !== 409) throw e;
  });
  t0 = performance.now();
  const had = count();
  const ipamFigures = [];
  let written = 0;
  let made = had;
  for (const size of [PODS / 10, PODS]) {
    t0 = performance.now();
    if (made < size) await createAll(cluster, size, 16, made);
    made = Math.max(made, size);
    await writeCalico(cluster, { nodes: NODES, pods: size, from: written, podName, nodeName: kwokNode, namespace: NAMESPACE, realNode: node.name });
    await writeWhereabouts(cluster, { pods: size, podName, namespace: NAMESPACE });
    written = size;
    console.log(`${size} pods with their Calico blocks, affinities and handles and ${Math.ceil(size / POOL_SIZE)} whereabouts pool(s) of ${POOL_SIZE}, in ${seconds(performance.now() - t0)} s`);
    ipamFigures.push({ size, ...measureIpam() });
  }
  for (const f of ipamFigures) {
    console.log(`${f.size} pods: audit-node ${node.name}: median ${seconds(f.own.ms)} s [${f.own.times}], peak RSS ${f.own.rssMiB.toFixed(0)} MiB, ${f.own.requests} API requests, ${kib(f.own.bytes)} KiB read; --cluster-wide: ${seconds(f.whole.ms)} s [${f.whole.times}], ${f.whole.rssMiB.toFixed(0)} MiB, ${f.whole.requests} requests, ${kib(f.whole.bytes)} KiB`);
    console.log(`${f.size} pods: whereabouts, a node on ${poolRange(0)}: median ${seconds(f.pools.ms)} s, peak RSS ${f.pools.rssMiB.toFixed(0)} MiB, ${f.pools.requests} requests, ${kib(f.pools.bytes)} KiB read (${f.pools.allocations} allocations of its range)`);
  }
  const [small, big] = ipamFigures;
  console.log(`API bytes of one node's audit, ${big.size} / ${small.size} pods: ${(big.own.bytes / small.own.bytes).toFixed(2)}x (target within 2x); of --cluster-wide: ${(big.whole.bytes / small.whole.bytes).toFixed(1)}x`);
  console.log(`at ${big.size} pods, --cluster-wide / the node's audit: ${(big.whole.ms / big.own.ms).toFixed(1)}x time, ${(big.whole.rssMiB / big.own.rssMiB).toFixed(1)}x memory, ${(big.whole.bytes / big.own.bytes).toFixed(0)}x bytes`);
  console.log(`targets (audit of one node under 2 s and 128 MiB, bytes within 2x): time ${big.own.ms < 2000 ? 'met' : 'MISSED'}, memory ${big.own.rssMiB < 128 ? 'met' : 'MISSED'}, bytes ${big.own.bytes < 2 * small.own.bytes ? 'met' : 'MISSED'}`);
  console.log(`created ${PODS - had} pods (${PODS / NODES} per API-only node; ${had} there from before)`);
  // The cluster-wide pod list a user would run, against the audit (BENCH_SCALE_KUBECTL=0 skips it: 20 minutes here).
  if (process.env.BENCH_SCALE_KUBECTL !== '0') await compareWithKubectl(count);
} finally {
  t0 = performance.now();
  // The pods straight out of the bed's etcd (its HTTP gateway), as the apiserver's watch then sees them go: through
  // the API, 50,000 deletes take half an hour on 2 cores, and a collection delete outlasts the request timeout.
  const key = (k) => Buffer.from(k).toString('base64');
  const range = { key: key(`/registry/pods/${NAMESPACE}/`), range_end: key(`/registry/pods/${NAMESPACE}0`) };
  const deleted = await fetch('http://127.0.0.1:23790/v3/kv/deleterange', { method: 'POST', body: JSON.stringify(range) }).then((r) => r.json());
  const kept = await bedHandles(cluster);
  for (const prefix of ipamKeyPrefixes(node.name)) await fetch('http://127.0.0.1:23790/v3/kv/deleterange', { method: 'POST', body: JSON.stringify({ key: key(prefix), range_end: key(`${prefix}\uffff`) }) });
  await putBackHandles(cluster, kept);
  kubectl('delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=true', '--timeout=600s');
  kubectl('delete', 'nodes', '-l', 'node-maint.io/testbed=api-only', '--wait=false');
  // kwok plays nothing any more: stopped, so that it costs no CPU beside the tests.
  execFileSync('bash', ['testbed/ctl', 'stop', 'kwok']);
  console.log(`removed the ${deleted.deleted ?? 0} pods, their namespace and the API-only nodes in ${seconds(performance.now() - t0)} s`);
}

/** kubectl get pods -A, paged and in one answer, against the node's audit, once kwok plays the pods Running. */
async function compareWithKubectl(count) {
  // kwok reports them Running with their IP, as kubelets would, at its own pace (tens a second here): measured once
  // all are, or after WAIT_MS with as many as there are (the audit reads every pod either way).
  t0 = performance.now();
  let running = 0;
  for (;;) {
    running = count('--field-selector', 'status.phase=Running');
    if (running >= PODS || performance.now() - t0 > WAIT_MS) break;
    await new Promise((r) => setTimeout(r, 10_000));
  }
  console.log(`${running} of them Running (kwok), after ${seconds(performance.now() - t0)} s`);

  let report;
  const ours = medians(() => {
    const r = timed('node', ['runbooks/audit-node.mjs', node.name, '--output', 'json', ...access]);
    if (![0, 13].includes(r.code)) throw new Error(`audit-node exited ${r.code}: ${r.stderr.slice(-500)}`);
    report = JSON.parse(r.stdout);
    return r;
  });
  let listBytes = 0;
  let pods = 0;
  const listing = (...extra) => () => {
    const r = timed(env.kubectl, ['--kubeconfig', env.kubeconfig, 'get', 'pods', '-A', '-o', 'json', ...extra]);
    listBytes = Buffer.byteLength(r.stdout);
    pods = JSON.parse(r.stdout).items.length;
    return { ms: r.ms, rssMiB: r.rssMiB };
  };
  const paged = medians(listing());
  const whole = medians(listing('--chunk-size', '0'));
  console.log(`cluster: ${pods} pods on ${NODES} API-only nodes and the bed's own; a cluster-wide pod list is ${mib(listBytes)} MiB of JSON`);
  console.log(`node-maint audit-node ${node.name} (verdict ${report.verdict}): median ${seconds(ours.ms)} s [${ours.times}], peak RSS ${ours.rssMiB.toFixed(0)} MiB, ${report.api.requests} API requests, ${(report.api.bytesRead / 1024).toFixed(0)} KiB read from the API`);
  console.log(`kubectl get pods -A -o json (pages of 500):  median ${seconds(paged.ms)} s [${paged.times}], peak RSS ${paged.rssMiB.toFixed(0)} MiB`);
  console.log(`kubectl get pods -A -o json, one answer:     median ${seconds(whole.ms)} s [${whole.times}], peak RSS ${whole.rssMiB.toFixed(0)} MiB (how this tool listed pods before it paged)`);
  console.log(`ratio kubectl paged / node-maint audit: ${(paged.ms / ours.ms).toFixed(1)}x time, ${(paged.rssMiB / ours.rssMiB).toFixed(1)}x memory`);
  console.log(`targets (audit of one node under 2 s and 256 MiB): time ${ours.ms < 2000 ? 'met' : 'MISSED'}, memory ${ours.rssMiB < 256 ? 'met' : 'MISSED'}`);
}
