// Benchmark: draining one kwok node that runs the pods of a Deployment under a PodDisruptionBudget, with the runbook's
// drain (cordon, plan, evictions paced by the budget, wait for the pods) against `kubectl drain` of the same node and
// pods, alternating, 3 runs each; wall time and API requests (kubectl's counted from its -v=6 log). Cases:
// - 100 pods, maxUnavailable 10 (the case the drain target was set on), replacements Ready when bound, and Ready 5 s
//   after (a container that starts and passes its readiness probe);
// - 20 pods, maxUnavailable 1, replacements Ready 1 s after they are bound (a small budget-bound workload).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { median } from './bench-node.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const NS = 'bench-drain';
const NODES = ['kwok-0001', 'kwok-0002', 'kwok-0003', 'kwok-0004'];
const [TARGET, ...OTHERS] = NODES;

execFileSync('bash', ['testbed/up', '--kwok-only', String(NODES.length)], { stdio: ['ignore', 'ignore', 'inherit'] });
const env = JSON.parse(readFileSync('/var/lib/node-maint-testbed/env.json', 'utf8'));
const kubectl = (...args) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
const lib = (path) => import(new URL(`../dist/${path}`, import.meta.url).href);
const { Cluster } = await lib('cluster/api.js');
const { setUnschedulable } = await lib('cluster/nodes.js');
const { planDrain } = await lib('cluster/drain/plan.js');
const { evictWithinBudgets } = await lib('cluster/drain/budgeted.js');
const { evictionVersion, waitForPodsGone } = await lib('cluster/drain/evict.js');
const { DEFAULT_DRAIN_OPTIONS } = await lib('cluster/drain/filters.js');

// kwok plays the pods (testbed/kwok/stages.yaml), deleted at once when evicted; each case's pod template decides
// which stage makes them Ready: at once (an IP annotation), or a bench stage after 1 s or 5 s.
const benchPod = (delay) => ({ labels: { app: 'web', 'node-maint.io/bench-pod': `ready-${delay}` } });
const CASES = [
  { pods: 100, maxUnavailable: 10, ready: 'Ready when bound', podMeta: { labels: { app: 'web' }, annotations: { 'testbed.node-maint.io/ip': '10.254.0.1', 'testbed.node-maint.io/released': 'true' } } },
  { pods: 100, maxUnavailable: 10, ready: 'Ready 5 s after they are bound', podMeta: benchPod('5s') },
  { pods: 20, maxUnavailable: 1, ready: 'Ready 1 s after they are bound', podMeta: benchPod('1s') },
]
  .map((c) => ({ ...c, name: `${c.pods} pods, budget maxUnavailable ${c.maxUnavailable}, replacements ${c.ready}` }))
  // BENCH_DRAIN_CASES=3 runs only the third case (1-based, comma-separated).
  .filter((_, i) => !process.env.BENCH_DRAIN_CASES || process.env.BENCH_DRAIN_CASES.split(',').map(Number).includes(i + 1));
const manifest = ({ podMeta, maxUnavailable }) => ({
  apiVersion: 'v1',
  kind: 'List',
  items: [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: podMeta,
          spec: {
            nodeSelector: { 'node-maint.io/testbed': 'api-only' },
            tolerations: [{ key: 'node-maint.io/api-only', operator: 'Exists', effect: 'NoSchedule' }],
            containers: [{ name: 'web', image: 'registry.invalid/web:1' }],
          },
        },
      },
    },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: NS }, spec: { maxUnavailable, selector: { matchLabels: { app: 'web' } } } },
  ],
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, check, timeoutMs = 300_000) {
  const t0 = Date.now();
  while (!check()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}
const readyOn = (node) => JSON.parse(kubectl('get', 'pods', '-n', NS, '-o', 'json')).items.filter((p) => p.spec.nodeName === node && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
const podCount = () => JSON.parse(kubectl('get', 'pods', '-n', NS, '-o', 'json')).items.length;

/** All the Deployment's pods on the target node, Ready, and its budget settled at what it allows. */
async function pack({ pods: PODS, maxUnavailable }) {
  kubectl('scale', '-n', NS, 'deployment/web', '--replicas=0');
  await until('the pods to go', () => podCount() === 0);
  for (const n of OTHERS) kubectl('cordon', n);
  kubectl('uncordon', TARGET);
  kubectl('scale', '-n', NS, 'deployment/web', `--replicas=${PODS}`);
  await until(`${PODS} pods Ready on ${TARGET}`, () => readyOn(TARGET) === PODS);
  for (const n of OTHERS) kubectl('uncordon', n);
  await until(`the budget to allow ${maxUnavailable}`, () => JSON.parse(kubectl('get', 'pdb', '-n', NS, 'web', '-o', 'json')).status?.disruptionsAllowed === maxUnavailable);
}

async function ours() {
  const cluster = await Cluster.connect({ kubeconfig: env.kubeconfig });
  const t0 = performance.now();
  await setUnschedulable(cluster, TARGET, true);
  const drain = { ...DEFAULT_DRAIN_OPTIONS, timeoutSeconds: 600 };
  const plan = await planDrain(cluster, TARGET, drain);
  const deadline = Date.now() + drain.timeoutSeconds * 1000;
  const version = await evictionVersion(cluster);
  let refused = 0;
  await evictWithinBudgets(cluster, plan.evict, { gracePeriodSeconds: drain.gracePeriodSeconds, deadline, version, progress: { onRetry: () => refused++ } });
  const evictedMs = performance.now() - t0;
  await waitForPodsGone(cluster, TARGET, [...plan.evict, ...plan.waitFor], { deadline });
  return { ms: performance.now() - t0, requests: cluster.requestsSent, refused, evictedMs };
}

async function kubectlDrain() {
  const t0 = performance.now();
  const r = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'drain', TARGET, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=600s', '-v=6'], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`kubectl drain failed: ${r.stderr.slice(-2000)}`);
  const lines = r.stderr.split('\n').filter((l) => /round_trippers/.test(l) && /\b(GET|POST|PUT|PATCH|DELETE)\b/.test(l) && /https?:\/\//.test(l));
  return { ms, requests: lines.length, refused: lines.filter((l) => / 429 /.test(l)).length };
}

const summary = [];
// A namespace left by an earlier bench run may still be going away.
kubectl('delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=300s');
try {
  for (const c of CASES) {
    execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'apply', '-f', '-'], { input: JSON.stringify(manifest(c)) });
    const runs = { ours: [], kubectl: [] };
    for (let i = 0; i < RUNS; i++) {
      for (const [name, fn] of i % 2 === 0 ? [['ours', ours], ['kubectl', kubectlDrain]] : [['kubectl', kubectlDrain], ['ours', ours]]) {
        await pack(c);
        const r = await fn();
        runs[name].push(r);
        console.log(`drain ${name.padEnd(7)} run ${i + 1} (${c.name}): ${(r.ms / 1000).toFixed(1)} s, ${r.requests} API requests, ${r.refused} evictions refused${r.evictedMs ? ` (all evictions accepted after ${(r.evictedMs / 1000).toFixed(1)} s)` : ''}`);
      }
    }
    const m = (name, key) => median(runs[name].map((r) => r[key]));
    summary.push(
      `drain of ${c.name}: ours median ${(m('ours', 'ms') / 1000).toFixed(1)} s [${runs.ours.map((r) => (r.ms / 1000).toFixed(1)).join(', ')}], kubectl drain median ${(m('kubectl', 'ms') / 1000).toFixed(1)} s [${runs.kubectl.map((r) => (r.ms / 1000).toFixed(1)).join(', ')}]`,
      `  ratio ours / kubectl drain: ${(m('ours', 'ms') / m('kubectl', 'ms')).toFixed(2)} (time), ${(m('ours', 'requests') / m('kubectl', 'requests')).toFixed(2)} (API requests: ${m('ours', 'requests')} vs ${m('kubectl', 'requests')})`,
    );
  }
  console.log(summary.join('\n'));
} finally {
  kubectl('delete', 'namespace', NS, '--wait=false');
  kubectl('delete', 'nodes', '-l', 'node-maint.io/testbed=api-only', '--wait=false');
}
