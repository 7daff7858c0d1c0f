import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';

// A benchmark node: a container on the test bed's own dockerd from the pool's docker node image (not booted: only its
// files and its docker CLI, which talks to that dockerd), where the bench creates its sandboxes (Created containers
// labelled as cri-dockerd labels them). Its kubenet IPAM and CNI cache directories are filled in place.
const ENV = '/var/lib/node-maint-testbed/env.json';

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function dockerApi(socket, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, method, path, headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => (res.statusCode < 300 ? resolve(text ? JSON.parse(text) : {}) : reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

export async function benchNode({ sandboxes, ipFiles, cacheEntries }) {
  if (!existsSync(ENV)) execFileSync('bash', ['testbed/up'], { stdio: 'inherit' });
  const env = JSON.parse(readFileSync(ENV, 'utf8'));
  const dockerHost = env.bedDockerHost;
  const socket = dockerHost.replace('unix://', '');
  const docker = (...args) => execFileSync('docker', ['-H', dockerHost, ...args], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const container = 'tb-bench';
  const image = docker('images', '--format', '{{.Repository}}:{{.Tag}}', 'testbed/pool-node').split('\n').find((t) => t.endsWith('-docker'));
  if (!image) throw new Error('no pool docker node image on the bed: run testbed/up');
  docker('rm', '-f', container);
  await removeSandboxes(socket);
  docker('run', '-d', '--name', container, '--network', 'none', '--label', 'node-maint-bench=1', '--entrypoint', '/bin/sleep',
    '-v', `${socket}:/var/run/docker.sock`, image, 'infinity');
  const ids = [];
  for (let i = 0; i < sandboxes; i++) {
    const made = await dockerApi(socket, 'POST', '/containers/create', {
      Image: image,
      Entrypoint: ['/bin/true'],
      Labels: { 'node-maint-bench': '1', 'io.kubernetes.docker.type': 'podsandbox', 'io.kubernetes.pod.uid': `uid-${i}`, 'io.kubernetes.pod.namespace': 'bench', 'io.kubernetes.pod.name': `pod-${i}` },
      HostConfig: { NetworkMode: 'none' },
    });
    ids.push(made.Id);
  }
  // IPs 10.200.0.0/18 and up: the first `sandboxes` owned by the sandboxes above, the rest by containers long gone.
  const fill = `
    set -e
    d=/var/lib/cni/networks/kubenet; c=/var/lib/cni/cache/results
    mkdir -p $d $c; touch $d/lock; echo 10.200.0.2 > $d/last_reserved_ip.0
    awk -v n=${ipFiles} -v m=${cacheEntries} -v d=$d -v c=$c '
      BEGIN { srand(7) }
      NR <= n { ip = sprintf("10.200.%d.%d", int((NR + 1) / 256), (NR + 1) % 256)
                printf "%s\\r\\neth0", $1 > (d "/" ip); close(d "/" ip) }
      NR <= m { f = c "/kubenet-" $1 "-eth0"
                printf "{\\"kind\\":\\"cniCacheV1\\",\\"containerId\\":\\"%s\\",\\"config\\":\\"eyJjbmlWZXJzaW9uIjoiMC4xLjAiLCJuYW1lIjoia3ViZW5ldCIsInR5cGUiOiJicmlkZ2UifQ==\\",\\"ifName\\":\\"eth0\\",\\"networkName\\":\\"kubenet\\",\\"result\\":{\\"cniVersion\\":\\"0.1.0\\",\\"ip4\\":{\\"ip\\":\\"10.200.%d.%d/18\\",\\"gateway\\":\\"10.200.0.1\\"}}}", $1, int((NR + 1) / 256), (NR + 1) % 256 > f; close(f) }'`;
  const owners = [...ids, ...Array.from({ length: Math.max(ipFiles, cacheEntries) - ids.length }, (_, i) => (BigInt(i + 1) * 0x9e3779b97f4a7c15n).toString(16).padStart(64, '0').slice(-64))];
  execFileSync('docker', ['-H', dockerHost, 'exec', '-i', container, 'sh', '-c', fill], { input: `${owners.join('\n')}\n` });
  return {
    container,
    dockerHost,
    cidr: '10.200.0.0/18',
    remove: async () => {
      docker('rm', '-f', container);
      await removeSandboxes(socket);
    },
  };
}

async function removeSandboxes(socket) {
  const list = await dockerApi(socket, 'GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: ['io.kubernetes.docker.type=podsandbox', 'node-maint-bench=1'] }))}`);
  for (const c of list) await dockerApi(socket, 'DELETE', `/containers/${c.Id}?force=1`);
}
