// Benchmark: the leak audit on a node with 10,000 host-local IP files, 10,000 CNI cache entries and 1,400 sandboxes,
// against the field report's shell loop (seeds/000) on the same node state, in the same run. Needs the test bed.
import { performance } from 'node:perf_hooks';
import { auditNode } from '../dist/leaks/audit.js';
import { readNodeState } from '../dist/node/state/index.js';
import { openTransport } from '../dist/node/transport/index.js';
import { benchNode, median } from './bench-node.mjs';

const SANDBOXES = 1400;
const IP_FILES = 10_000;
const CACHE_ENTRIES = 10_000;
const RUNS = 5;

// The field's "recommended" loop, verbatim in substance: one head, sed, echo and grep per file.
const FIELD_LOOP = `all_containers=$(docker ps -a -q);for ip in $(ls /var/lib/cni/networks/kubenet/ |grep -v -E "last_reserved_ip.0|lock");do docker_id=$(head -n 1 /var/lib/cni/networks/kubenet/$ip| sed 's/\\r//');  if [ -z "\${docker_id}" -o -z "$(echo \${all_containers} | grep "\${docker_id:0:8}")" ];then echo $ip;fi;done`;

const node = await benchNode({ sandboxes: SANDBOXES, ipFiles: IP_FILES, cacheEntries: CACHE_ENTRIES });
try {
  const transport = await openTransport({ kind: 'docker-exec', container: node.container, dockerHost: node.dockerHost });
  const ours = [];
  let report;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const state = await readNodeState(transport);
    report = auditNode({ node: 'bench', state, pods: [], podCidr: node.cidr });
    ours.push(performance.now() - t0);
  }
  const field = [];
  let fieldLeaks = [];
  for (let i = 0; i < Math.min(RUNS, 2); i++) {
    const t0 = performance.now();
    const out = await transport.exec(`bash -c ${JSON.stringify(FIELD_LOOP).replace(/\$/g, '\\$')}`, { timeoutMs: 900_000 });
    field.push(performance.now() - t0);
    fieldLeaks = out.stdout.split('\n').filter(Boolean);
  }
  const ourLeaks = report.findings.filter((f) => f.class === 'ip-reservation-leaked').map((f) => f.evidence.ip);
  const agree = ourLeaks.length === fieldLeaks.length && ourLeaks.every((ip) => fieldLeaks.includes(ip));
  const rss = process.resourceUsage().maxRSS / 1024;
  console.log(`node state: ${report.counts.reservations} IP files, ${report.counts.cacheEntries} cache entries, ${report.counts.sandboxes} sandboxes`);
  console.log(`findings: ${report.findings.length} (${ourLeaks.length} leaked IPs; the field loop found ${fieldLeaks.length}; same set: ${agree})`);
  console.log(`node-maint audit, end to end (one round trip + parse + detect): median ${median(ours).toFixed(0)} ms over ${ours.length} runs [${ours.map((t) => t.toFixed(0)).join(', ')}]`);
  console.log(`field shell loop (seeds/000), IP files only:                    median ${median(field).toFixed(0)} ms over ${field.length} runs [${field.map((t) => t.toFixed(0)).join(', ')}]`);
  console.log(`ratio field / node-maint: ${(median(field) / median(ours)).toFixed(1)}x; peak RSS of this process ${rss.toFixed(0)} MiB`);
  console.log(`target (< 2000 ms end to end): ${median(ours) < 2000 ? 'met' : 'MISSED'}`);
  await transport.close();
  if (!agree) process.exitCode = 1;
} finally {
  await node.remove();
}
