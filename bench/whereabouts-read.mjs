// Run by bench/scale.mjs under /usr/bin/time: what one node's audit reads of whereabouts when its network's range is
// RANGE (argv[2]): the pools, in this process, as auditLiveNode reads them. Prints {ms, requests, bytesRead, allocations}.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Cluster } from '../dist/cluster/api.js';
import { readWhereaboutsView } from '../dist/leaks/whereabouts/read.js';

const env = JSON.parse(readFileSync('/var/lib/node-maint-testbed/env.json', 'utf8'));
const cluster = await Cluster.connect({ kubeconfig: env.kubeconfig });
const t0 = performance.now();
const view = await readWhereaboutsView(cluster, [process.argv[2]]);
console.log(JSON.stringify({ ms: performance.now() - t0, requests: cluster.requestsSent, bytesRead: cluster.bytesRead, allocations: view?.allocations.length ?? 0 }));
