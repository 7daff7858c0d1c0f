// Benchmark: what a fleet of idle node-maint agents costs the API, against what a poller costs (the ConfigMap
// protocol's idle loop before MaintenanceRuns, or an operator's `while true; do kubectl get ...; sleep 2; done`), in
// the same run on the bed's real apiserver. Each simulated agent runs the agent's own idle code: its watch on its
// node's MaintenanceRun (RunWatch) and its facts loop (factsLoop, the node's facts as a real node's). The agents'
// clocks are compressed (BENCH_IDLE_SPEEDUP, 60x: a watch held 30-60 s instead of 30-60 min, facts written every 60 s
// instead of hourly) so a short window shows the steady state; their rate is scaled back by the same factor. The
// requests are counted as sent, and cross-checked against the apiserver's own apiserver_request_total.
// Needs the test bed (testbed/up), and no `npm test` beside it. Removes what it made.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Cluster } from '../dist/cluster/api.js';
import { RunWatch } from '../dist/agent/run-watch.js';
import { factsLoop } from '../dist/agent/facts-loop.js';
import { parseFacts, FACTS_REFRESH_MS } from '../dist/agent/facts.js';
import { runPath } from '../dist/agent/run-object.js';

const AGENTS = Number(process.env.BENCH_AGENTS ?? 1000);
const POLLERS = Number(process.env.BENCH_POLLERS ?? 100);
const SPEEDUP = Number(process.env.BENCH_IDLE_SPEEDUP ?? 60);
const WINDOW_S = Number(process.env.BENCH_IDLE_WINDOW_S ?? 180);
const env = JSON.parse(readFileSync('/var/lib/node-maint-testbed/env.json', 'utf8'));
const kubectl = (...args) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const names = (n, prefix) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);

/** The apiserver's own count of requests for maintenanceruns, by verb. */
function serverCounts() {
  const counts = {};
  for (const line of kubectl('get', '--raw', '/metrics').split('\n')) {
    const m = /^apiserver_request_total\{(.*)\} (\d+)$/.exec(line);
    if (!m || !m[1].includes('resource="maintenanceruns"')) continue;
    const verb = /verb="(\w+)"/.exec(m[1])[1];
    counts[verb] = (counts[verb] ?? 0) + Number(m[2]);
  }
  return counts;
}
const total = (c) => Object.values(c).reduce((a, b) => a + b, 0);

// What a containerd node of the bed reports (dpkg-query, apt-cache madison, no reboot due).
const FACTS_OUT = 'containerd\t1.6.20~ds1-1+deb12u2\thi \n@@node-maint-offered\ncontainerd\t1.6.20~ds1-1+deb12u3\n@@node-maint-reboot\n@@node-maint-audit\n';

kubectl('apply', '-f', 'runbooks/agent/namespaces.yaml', '-f', 'runbooks/agent/crd.yaml');
kubectl('wait', '--for=condition=Established', 'crd/maintenanceruns.node-maint.io');
const cluster = await Cluster.connect({ kubeconfig: env.kubeconfig });
const agents = names(AGENTS, 'bench-idle-agent');
console.log(`idle agents: ${AGENTS} agents (their clocks ${SPEEDUP}x) against ${POLLERS} pollers (a GET every 2 s), ${WINDOW_S} s`);

// The agents: each its watch and its facts, as main.ts runs them when nothing is asked.
const watchSeconds = () => Math.max(1, Math.round((1800 + Math.random() * 1800) / SPEEDUP));
for (const node of agents) {
  const watch = new RunWatch(cluster, node, watchSeconds);
  void (async () => {
    for (;;) await watch.untilWork().catch(() => sleep(5_000));
  })();
  factsLoop(cluster, async () => parseFacts(node, ['containerd'], FACTS_OUT), () => undefined, { readEveryMs: (5 * 60_000) / SPEEDUP, refreshMs: FACTS_REFRESH_MS / SPEEDUP });
}
// Past their start (each agent's first list and facts): the steady state.
await sleep(Math.max(20_000, (3 * 60_000) / SPEEDUP));
const agentsFrom = { sent: cluster.requestsSent, server: serverCounts() };
await sleep(WINDOW_S * 1000);
const agentsSent = cluster.requestsSent - agentsFrom.sent;
const agentsServer = total(serverCounts()) - total(agentsFrom.server);

// The pollers, in the same run, on a connection of their own.
const pollCluster = await Cluster.connect({ kubeconfig: env.kubeconfig });
const pollers = names(POLLERS, 'bench-idle-poller');
let polling = true;
const pollFrom = { sent: pollCluster.requestsSent, server: serverCounts() };
const polls = pollers.map(async (node, i) => {
  await sleep((2_000 * i) / POLLERS);
  while (polling) {
    await pollCluster.get(runPath(node)).catch(() => undefined);
    await sleep(2_000);
  }
});
const POLL_WINDOW_S = Math.min(WINDOW_S, 60);
await sleep(POLL_WINDOW_S * 1000);
polling = false;
await Promise.all(polls);
const pollSent = pollCluster.requestsSent - pollFrom.sent;
const pollServer = total(serverCounts()) - total(pollFrom.server);

const perAgent = (agentsSent / WINDOW_S) * (1 / SPEEDUP) / AGENTS;
const perPoller = pollSent / POLL_WINDOW_S / POLLERS;
const fleet = (rate) => (rate * 1000).toFixed(3);
console.log(`  agents:  ${agentsSent} requests in ${WINDOW_S} s of their compressed time (the apiserver counted ${agentsServer} for maintenanceruns)`);
console.log(`           ${fleet(perAgent)} requests/s for 1,000 idle agents in real time (goal: under 1); per agent one every ${(1 / perAgent / 60).toFixed(0)} min`);
console.log(`  pollers: ${pollSent} requests in ${POLL_WINDOW_S} s (the apiserver counted ${pollServer}): ${fleet(perPoller)} requests/s for 1,000 nodes`);
console.log(`  ratio:   a poller costs ${(perPoller / perAgent).toFixed(0)}x an idle agent`);

// What the agents made.
kubectl('-n', 'node-maint', 'delete', 'configmap', '--ignore-not-found', '--wait=false', ...agents.map((n) => `node-maint-facts-${n}`));
process.exit(0);
