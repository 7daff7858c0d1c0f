// Benchmark: draining one kwok node that runs 100 pods of a Deployment whose PodDisruptionBudget allows 10 at a time,
// with the runbook's drain (cordon, plan, evictions paced by the budget, wait for the pods) against `kubectl drain` of
// the same node and pods, alternating, 3 runs each; wall time and API requests (kubectl's counted from its -v=6 log).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { median } from './bench-node.mjs';

const PODS = Number(process.env.BENCH_PODS ?? 100);
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

// kwok plays the pods (testbed/fleet/kwok-stages.yaml): a bench pod is Ready 5 s after it is bound, as a container that
// starts and passes its readiness probe, and is deleted at once when evicted. Replacements gate the budget.
const READY_AFTER_S = 5;
const manifest = {
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
          metadata: { labels: { app: 'web', 'node-maint.io/bench-pod': 'true' } },
          spec: {
            nodeSelector: { 'node-maint.io/testbed': 'api-only' },
            tolerations: [{ key: 'node-maint.io/api-only', operator: 'Exists', effect: 'NoSchedule' }],
            containers: [{ name: 'web', image: 'registry.invalid/web:1' }],
          },
        },
      },
    },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: NS }, spec: { maxUnavailable: 10, selector: { matchLabels: { app: 'web' } } } },
  ],
};

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

/** All the Deployment's pods on the target node, Ready, and its budget settled at 10. */
async function pack() {
  kubectl('scale', '-n', NS, 'deployment/web', '--replicas=0');
  await until('the pods to go', () => podCount() === 0);
  for (const n of OTHERS) kubectl('cordon', n);
  kubectl('uncordon', TARGET);
  kubectl('scale', '-n', NS, 'deployment/web', `--replicas=${PODS}`);
  await until(`${PODS} pods Ready on ${TARGET}`, () => readyOn(TARGET) === PODS);
  for (const n of OTHERS) kubectl('uncordon', n);
  await until('the budget to allow 10', () => JSON.parse(kubectl('get', 'pdb', '-n', NS, 'web', '-o', 'json')).status?.disruptionsAllowed === 10);
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
  return { ms: performance.now() - t0, requests: cluster.requestsSent, pods: plan.evict.length, refused, evictedMs };
}

async function kubectlDrain() {
  const t0 = performance.now();
  const r = spawnSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'drain', TARGET, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=600s', '-v=6'], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`kubectl drain failed: ${r.stderr.slice(-2000)}`);
  const lines = r.stderr.split('\n').filter((l) => /round_trippers/.test(l) && /\b(GET|POST|PUT|PATCH|DELETE)\b/.test(l) && /https?:\/\//.test(l));
  return { ms, requests: lines.length, pods: PODS, refused: lines.filter((l) => / 429 /.test(l)).length };
}

execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, 'apply', '-f', '-'], { input: JSON.stringify(manifest) });
const runs = { ours: [], kubectl: [] };
try {
  for (let i = 0; i < RUNS; i++) {
    for (const [name, fn] of i % 2 === 0 ? [['ours', ours], ['kubectl', kubectlDrain]] : [['kubectl', kubectlDrain], ['ours', ours]]) {
      await pack();
      const r = await fn();
      runs[name].push(r);
      console.log(`drain ${name.padEnd(7)} run ${i + 1}: ${(r.ms / 1000).toFixed(1)} s, ${r.requests} API requests, ${r.refused} evictions refused, ${r.pods} pods${r.evictedMs ? ` (all evictions accepted after ${(r.evictedMs / 1000).toFixed(1)} s)` : ''}`);
    }
  }
  const m = (name, key) => median(runs[name].map((r) => r[key]));
  console.log(`drain of ${PODS} pods, budget maxUnavailable 10, replacements Ready ${READY_AFTER_S} s after they are bound: ours median ${(m('ours', 'ms') / 1000).toFixed(1)} s [${runs.ours.map((r) => (r.ms / 1000).toFixed(1)).join(', ')}], kubectl drain median ${(m('kubectl', 'ms') / 1000).toFixed(1)} s [${runs.kubectl.map((r) => (r.ms / 1000).toFixed(1)).join(', ')}]`);
  console.log(`ratio ours / kubectl drain: ${(m('ours', 'ms') / m('kubectl', 'ms')).toFixed(2)} (time), ${(m('ours', 'requests') / m('kubectl', 'requests')).toFixed(2)} (API requests: ${m('ours', 'requests')} vs ${m('kubectl', 'requests')})`);
} finally {
  kubectl('delete', 'namespace', NS, '--wait=false');
  kubectl('delete', 'nodes', '-l', 'node-maint.io/testbed=api-only', '--wait=false');
}
