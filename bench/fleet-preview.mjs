// Benchmark: `pulumi preview` of a fleet of 1,000 API-only kwok nodes (the program resolves the selector, tries to
// observe each node's versions, plans one resource per node in waves), against `kubectl get nodes` of the same
// nodes, and the same preview with `access: agent` (the nodes' facts published as their agents do), in the same run. Registers the nodes through the test bed and removes them afterwards.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { median } from './bench-node.mjs';

const COUNT = Number(process.env.BENCH_NODES ?? 1000);
const RUNS = 3;
const env = JSON.parse(readFileSync('/var/lib/node-maint-testbed/env.json', 'utf8'));
const kubectl = (...args) => execFileSync(env.kubectl, ['--kubeconfig', env.kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
const time = (fn) => {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
};

const t0 = performance.now();
execFileSync('bash', ['testbed/up', '--kwok-only', String(COUNT)], { stdio: ['ignore', 'ignore', 'inherit'] });
console.log(`registered ${COUNT} API-only kwok nodes in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
try {
  const dir = mkdtempSync('/tmp/node-maint-bench-');
  const penv = {
    ...process.env,
    PATH: `${env.pulumiDir}:${process.env.PATH}`,
    PULUMI_HOME: join(dir, 'home'),
    PULUMI_BACKEND_URL: `file://${dir}`,
    PULUMI_CONFIG_PASSPHRASE: 'bench',
    PULUMI_SKIP_UPDATE_CHECK: 'true',
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true',
  };
  const configFile = join(dir, 'Pulumi.bench.yaml');
  const pulumi = (...args) => execFileSync('pulumi', args, { env: penv, encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  pulumi('stack', 'init', 'bench', '--non-interactive');
  if (existsSync('Pulumi.bench.yaml')) moveFile('Pulumi.bench.yaml', configFile);
  pulumi('config', 'set', '--config-file', configFile, 'node-maint:nodeSelector', 'node-maint.io/testbed=api-only');
  pulumi('config', 'set', '--config-file', configFile, 'node-maint:targets', JSON.stringify({ containerd: env.containerd.new }));
  pulumi('config', 'set', '--config-file', configFile, 'node-maint:maxUnavailable', '50');
  pulumi('config', 'set', '--config-file', configFile, 'node-maint:kubeconfig', env.kubeconfig);
  // Every node answers SSH, as a real fleet's do (the program refuses a fleet it cannot observe): each kwok node's host
  // is a pool node's real sshd, in turn (one sshd alone drops handshakes past its MaxStartups), so the preview makes
  // 1,000 real SSH reads of the versions.
  const names = kubectl('get', 'nodes', '-l', 'node-maint.io/testbed=api-only', '-o', 'name').trim().split('\n').map((n) => n.replace('node/', ''));
  const hosts = Object.fromEntries(names.map((n, i) => [n, `127.0.0.1:${env.nodes[i % env.nodes.length].sshPort}`]));
  pulumi('config', 'set', '--config-file', configFile, 'node-maint:ssh', JSON.stringify({ user: env.sshUser, knownHosts: env.knownHosts, hosts }));
  execFileSync('pulumi', ['config', 'set', '--secret', '--config-file', configFile, 'node-maint:sshKey'], { env: penv, input: readFileSync(env.sshKey, 'utf8') });
  // The field's way to the same versions: OpenSSH to every node, 16 at a time (as the program), dpkg-query through sudo.
  const loop = `xargs -P 16 -n 1 sh -c 'ssh -n -o BatchMode=yes -i "$KEY" -o UserKnownHostsFile="$KNOWN" -p "\${0#*:}" "$USER_AT\${0%:*}" sudo -n dpkg-query -W containerd >/dev/null'`;
  const loopEnv = { ...process.env, KEY: env.sshKey, KNOWN: env.knownHosts, USER_AT: `${env.sshUser}@` };
  const previews = [];
  const listings = [];
  const loops = [];
  const previewCpu = [];
  let planned = '';
  for (let i = 0; i < RUNS; i++) {
    const cpu0 = childCpuSeconds();
    previews.push(time(() => (planned = pulumi('preview', '--non-interactive', '--config-file', configFile))));
    previewCpu.push(childCpuSeconds() - cpu0);
    listings.push(time(() => kubectl('get', 'nodes', '-l', 'node-maint.io/testbed=api-only', '-o', 'wide')));
    loops.push(time(() => execFileSync('sh', ['-c', loop], { env: loopEnv, input: Object.values(hosts).join('\n') })));
  }
  // The same preview with `access: agent`: each node's facts as its agent publishes them (one ConfigMap a node, the
  // facts of the bed's containerd nodes), read in one list; no SSH key, no session to any node.
  const facts = (node) => ({ node, at: new Date().toISOString(), installed: { containerd: env.containerd.old, 'containerd.io': 'not installed', 'docker.io': 'not installed', 'docker-ce': 'not installed', runc: '1.1.5+ds1-1+deb12u1' }, offered: { containerd: [env.containerd.new, env.containerd.old], 'containerd.io': [], 'docker.io': [], 'docker-ce': [], runc: [] } });
  const factsFile = join(dir, 'facts.json');
  writeFileSync(factsFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'node-maint' } }, ...names.map((n) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `node-maint-facts-${n}`, namespace: 'node-maint', labels: { 'node-maint.io/facts': 'true' } }, data: { facts: JSON.stringify(facts(n)) } }))] }));
  const published = time(() => kubectl('apply', '--server-side', '-f', factsFile));
  const agentConfig = join(dir, 'Pulumi.bench-agent.yaml');
  writeFileSync(agentConfig, readFileSync(configFile));
  for (const key of ['ssh', 'sshKey']) pulumi('config', 'rm', '--config-file', agentConfig, `node-maint:${key}`);
  pulumi('config', 'set', '--config-file', agentConfig, 'node-maint:access', 'agent');
  const agentPreviews = [];
  let agentPlanned = '';
  for (let i = 0; i < RUNS; i++) agentPreviews.push(time(() => (agentPlanned = pulumi('preview', '--non-interactive', '--config-file', agentConfig))));
  // Pulumi's own floor in the same run: a plan as large, in the same waves, with nothing in it (bench/pulumi-floor).
  const floorDir = new URL('./pulumi-floor/', import.meta.url).pathname;
  const floor = (...args) => execFileSync('pulumi', args, { cwd: floorDir, env: { ...penv, BENCH_NODES: String(COUNT) }, encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  floor('stack', 'init', 'floor', '--non-interactive');
  const floorPreviews = [];
  for (let i = 0; i < RUNS; i++) floorPreviews.push(time(() => floor('preview', '--non-interactive')));
  rmSync(join(floorDir, 'Pulumi.floor.yaml'), { force: true });
  const s = (ms) => (ms / 1000).toFixed(1);
  console.log(`access: agent: ${COUNT} nodes' facts published in ${s(published)} s; pulumi preview plan: ${(/\+ (\d+) to create/.exec(agentPlanned) ?? [])[1] ?? '?'} resources to create; median ${s(median(agentPreviews))} s [${agentPreviews.map(s).join(', ')}]`);
  console.log(`ratio preview over SSH / through the agents' facts: ${(median(previews) / median(agentPreviews)).toFixed(1)}x (goal: 20x)`);
  console.log(`Pulumi's floor, ${COUNT} dynamic resources with nothing in them, same waves: median ${s(median(floorPreviews))} s [${floorPreviews.map(s).join(', ')}]; the most any preview through facts could gain over SSH here: ${(median(previews) / median(floorPreviews)).toFixed(1)}x; the agents' preview over the floor: ${(median(agentPreviews) / median(floorPreviews)).toFixed(2)}x`);
  console.log(`pulumi preview plan: ${(/\+ (\d+) to create/.exec(planned) ?? [])[1] ?? '?'} resources to create`);
  console.log(`pulumi preview, ${COUNT} nodes: median ${s(median(previews))} s [${previews.map(s).join(', ')}] (target: under 20 s); CPU of pulumi and its plugins: median ${median(previewCpu).toFixed(1)} s`);
  console.log(`kubectl get nodes, same nodes: median ${(median(listings) / 1000).toFixed(2)} s [${listings.map((t) => (t / 1000).toFixed(2)).join(', ')}]`);
  console.log(`the field's loop (OpenSSH, 16 at a time, dpkg-query), same nodes: median ${s(median(loops))} s [${loops.map(s).join(', ')}]`);
  console.log(`ratio preview / kubectl get nodes: ${(median(previews) / median(listings)).toFixed(1)}x (preview also plans ${COUNT} resources and reads each node's versions over SSH)`);
  console.log(`ratio preview / the field's SSH loop: ${(median(previews) / median(loops)).toFixed(2)}x (both wait on ${env.nodes.length} sshds on this machine's cores)`);
} finally {
  const t1 = performance.now();
  kubectl('delete', 'nodes', '-l', 'node-maint.io/testbed=api-only', '--wait=false');
  kubectl('delete', 'configmaps', '-n', 'node-maint', '-l', 'node-maint.io/facts=true', '--ignore-not-found', '--wait=false');
  console.log(`removed the API-only nodes in ${((performance.now() - t1) / 1000).toFixed(0)} s`);
}

/** CPU seconds of this process's waited-for children and theirs (/proc/self/stat cutime + cstime). */
function childCpuSeconds() {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/** Moves a file, also across filesystems. */
function moveFile(from, to) {
  writeFileSync(to, readFileSync(from));
  rmSync(from);
}
