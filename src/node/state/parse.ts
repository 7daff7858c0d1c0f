import { basename } from 'node:path';
import { parseCacheEntry } from '../cni/cache.js';
import { setAsideForeign } from '../cni/owners.js';
import { cleanVersions, parsePackageDb } from '../packages/index.js';
import { parseReservation } from '../cni/host-local.js';
import { parseRoute, type Route } from '../cni/routes.js';
import { parseCheckpoint } from '../runtime/checkpoint.js';
import { parseCrictlContainers, parseCrictlPods } from '../runtime/crictl.js';
import { parseDockerContainers, parseDockerPids } from '../runtime/docker.js';
import { parseSystemctlShow } from '../service.js';
import { detectFlavor } from '../runtime/flavor.js';
import { parseKubeletFlags } from './command-lines.js';
import { STATE_DIRS, UNITS } from './gather.js';
import type { IpamDirectory, NodeState, StateFile } from './types.js';

interface Section {
  name: string;
  arg: string;
  lines: string[];
  files: Map<string, string[]>;
}

/** Splits the gather script's output into sections; "@@file" blocks belong to the directory section before them. */
export function splitSections(output: string): Section[] {
  const sections: Section[] = [];
  let current: Section | undefined;
  let currentFile: string[] | undefined;
  for (const line of output.split('\n')) {
    if (line.startsWith('@@file ')) {
      currentFile = [];
      current?.files.set(line.slice(7), currentFile);
    } else if (line.startsWith('@@')) {
      const [name = '', ...rest] = line.slice(2).split(' ');
      current = { name, arg: rest.join(' '), lines: [], files: new Map() };
      currentFile = undefined;
      sections.push(current);
    } else if (line.startsWith('|')) {
      (currentFile ?? current?.lines)?.push(line.slice(1));
    }
  }
  return sections;
}

function dirFiles(section: Section): StateFile[] {
  return section.lines.map((line) => {
    const [name = '', size = '0', mtime = '0'] = line.split('\t');
    const path = `${section.arg}/${name}`;
    const content = section.files.get(path);
    return { path, name, size: Number(size), mtime: Math.floor(Number(mtime)), content: content?.join('\n') };
  });
}

function keyValues(lines: string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of lines) {
    const eq = line.indexOf('=');
    if (eq > 0) map.set(line.slice(0, eq), line.slice(eq + 1).replace(/^"|"$/g, ''));
  }
  return map;
}

export function parseNodeState(output: string): NodeState {
  const sections = splitSections(output);
  if (!sections.some((s) => s.name === 'end')) {
    throw new Error('the node state came back truncated (no end marker)');
  }
  const one = (name: string) => sections.find((s) => s.name === name);
  const netnsLines = (one('netns')?.lines ?? []).filter((l) => l !== '').map((l) => l.split('\t'));
  const meta = keyValues(one('meta')?.lines ?? []);
  const os = keyValues(one('os-release')?.lines ?? []);
  const tools = new Set(one('tools')?.lines ?? []);
  const state: NodeState = {
    hostname: meta.get('hostname') ?? '',
    now: Number(meta.get('now') ?? 0),
    uid: Number(meta.get('uid') ?? -1),
    os: { id: os.get('ID') ?? '', versionId: os.get('VERSION_ID') ?? '', prettyName: os.get('PRETTY_NAME') ?? '' },
    tools,
    packageManager: tools.has('apt-get') && tools.has('dpkg-query') ? 'apt' : null,
    packages: {},
    packageDb: { records: {}, interrupted: false, lockHolders: [] },
    services: {},
    processes: {},
    diskFreeBytes: {},
    cniBinDirs: one('cni-bin')?.lines ?? [],
    kubeletFlags: parseKubeletFlags(one('kubelet-env')?.lines ?? [], one('kubelet-config')?.lines ?? []),
    cniConfFiles: [],
    ipamRoots: [],
    refusedDataDirs: [],
    ipam: [],
    cniCache: [],
    foreign: { cniCache: [], ipam: [] },
    checkpoints: [],
    runtimeReachable: false,
    sandboxes: [],
    containers: [],
    netns: netnsLines.map(([name]) => name!),
    // A line without them (an older gather) says nothing of the pin's age or processes: no activity, not "none".
    netnsActivity: Object.fromEntries(netnsLines.filter((l) => l.length >= 3).map(([name, age, pids]) => [name!, { ageSeconds: Number(age), processes: Number(pids) }])),
    veths: (one('links')?.lines ?? []).map(parseVethLine).filter((v): v is { name: string; master: string | null } => v !== null),
    routes: parseRoutes(one('routes')?.lines ?? []),
    backups: one('backups')?.lines.filter((l) => l !== '') ?? [],
  };
  state.packageDb = parsePackageDb(one('packages')?.lines ?? [], one('dpkg-locks')?.lines ?? [], (one('dpkg-journal')?.lines ?? []).includes('interrupted'));
  state.packages = cleanVersions(state.packageDb);
  for (const unit of UNITS) state.services[unit] = parseSystemctlShow(unit, '');
  let unitLines: string[] = [];
  let unitName = '';
  const flushUnit = () => unitName && (state.services[unitName] = parseSystemctlShow(unitName, unitLines.join('\n')));
  for (const line of one('services')?.lines ?? []) {
    if (line.startsWith('Unit=')) {
      flushUnit();
      unitName = line.slice(5);
      unitLines = [];
    } else unitLines.push(line);
  }
  flushUnit();
  const [pid, unit, cgroup, systemdUnit, transient, fragmentPath] = (one('kubelet-unit')?.lines[0] ?? '').split('\t');
  // systemd's own word (the service whose main PID kubelet is) over the cgroup's, which --kubelet-cgroups changes.
  const named = systemdUnit || unit;
  if (pid) state.kubeletUnit = { pid: Number(pid), unit: named ? named.replace(/\.service$/, '') : null, cgroup: cgroup ?? '', transient: transient === 'yes', fragmentPath: fragmentPath ?? '' };
  for (const line of one('processes')?.lines ?? []) {
    const [name, , cmdline] = line.split('\t');
    if (name && cmdline && !state.processes[name]) state.processes[name] = cmdline.trim();
  }
  for (const line of (one('disk')?.lines ?? []).slice(1)) {
    const cols = line.split(/\s+/);
    if (cols.length >= 6) state.diskFreeBytes[cols[5]!] = Number(cols[3]) * 1024;
  }
  state.ipamRoots = one('ipam-roots')?.lines.filter((l) => l !== '') ?? [STATE_DIRS.ipam];
  state.refusedDataDirs = (one('ipam-datadirs')?.lines ?? []).filter((d) => d !== '' && !isPlainAbsolute(d));
  for (const section of sections.filter((s) => s.name === 'dir')) {
    addDirectory(state, section.arg, dirFiles(section));
  }
  // Docker and a CRI runtime may both serve (docker.io for builds next to kubelet's containerd): list both, and
  // count the runtime as reachable only if each one expected to answer did (a blind half is not "no sandboxes").
  const docker = one('docker');
  const crictlPods = one('crictl-pods');
  const dockerExpected = docker !== undefined && (docker.arg === 'up' || state.services.docker?.active === true);
  const criExpected = detectFlavor(state) === 'containerd';
  if (docker?.arg === 'up') {
    const found = parseDockerContainers(docker.lines, parseDockerPids(one('docker-pids')?.lines ?? []));
    state.sandboxes.push(...found.sandboxes);
    state.containers.push(...found.containers);
  }
  // crictl's answer counts only if it is the list it should be: a cut or garbled one is no answer.
  const pods = crictlPods ? parseCrictlPods(crictlPods.lines.join('\n')) : undefined;
  const containers = crictlPods ? parseCrictlContainers(one('crictl-containers')?.lines.join('\n') ?? '') : undefined;
  const criAnswered = pods !== undefined && containers !== undefined;
  if (criAnswered) {
    const known = new Set([...state.sandboxes, ...state.containers].map((x) => x.id));
    state.sandboxes.push(...pods.filter((x) => !known.has(x.id)));
    state.containers.push(...containers.filter((c) => !known.has(c.id)));
  }
  const answers = [...(dockerExpected ? [docker?.arg === 'up'] : []), ...(criExpected ? [criAnswered] : [])];
  state.runtimeReachable = answers.length > 0 ? answers.every(Boolean) : criAnswered;
  setAsideForeign(state);
  return state;
}

function addDirectory(state: NodeState, dir: string, files: StateFile[]): void {
  if (dir === STATE_DIRS.cniConf) {
    state.cniConfFiles = files;
  } else if (state.ipamRoots.includes(dir.slice(0, dir.lastIndexOf('/')))) {
    const network = basename(dir);
    const ipam: IpamDirectory = { network, path: dir, reservations: [], lastReserved: {} };
    for (const f of files) {
      if (f.name.startsWith('last_reserved_ip')) ipam.lastReserved[f.name] = (f.content ?? '').trim();
      const r = parseReservation(network, f.path, f.name, f.content ?? '', f.mtime);
      if (r) ipam.reservations.push(r);
    }
    state.ipam.push(ipam);
  } else if ((STATE_DIRS.cniCaches as readonly string[]).includes(dir)) {
    state.cniCache.push(...files.map((f) => parseCacheEntry(f.path, f.name, f.content, f.mtime)));
  } else if (dir === STATE_DIRS.checkpoints['cri-dockerd'] || dir === STATE_DIRS.checkpoints.dockershim) {
    const kind = dir === STATE_DIRS.checkpoints.dockershim ? 'dockershim' : 'cri-dockerd';
    state.checkpoints.push(...files.map((f) => parseCheckpoint(kind, f.path, f.name, f.content, f.mtime)));
  }
}

/** The routes, or undefined when `ip` did not finish (no "ok" line): unread, never "none". */
function parseRoutes(lines: string[]): Route[] | undefined {
  const read = lines.filter((l) => l !== '');
  if (read.at(-1) !== 'ok') return undefined;
  return read.slice(0, -1).map(parseRoute).filter((r): r is Route => r !== undefined);
}

function parseVethLine(line: string): { name: string; master: string | null } | null {
  const m = /^\d+:\s+([^:@\s]+)(?:@[^:]+)?:.*?(?:\smaster\s+(\S+))?\s/.exec(line);
  return m ? { name: m[1]!, master: m[2] ?? null } : null;
}

/** An absolute path with no `.` or `..` segment, and not `/` itself: the only kind of dataDir node-maint touches. */
export function isPlainAbsolute(path: string): boolean {
  return /^\/[A-Za-z0-9._/-]+$/.test(path) && !path.split('/').some((seg) => seg === '.' || seg === '..') && path.replace(/\/+$/, '') !== '';
}
