import { execFile } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RunbookError } from '../errors.js';
import { BOOT_IDENTITY_SCRIPT, parseBootIdentity } from '../node/reboot.js';
import { AUDIT_TEXTFILE } from '../metrics/textfile-dir.js';

// What the agent does on its node's host, and nothing more: its pod shares the host's PID namespace, so PID 1 is the
// host's systemd; `nsenter` into PID 1's mount namespace reaches `systemd-run` and `systemctl` there, and the run
// becomes a unit of the host's systemd that outlives the pod, the runtime's restart and kubelet's stop.

const exec = promisify(execFile);

/** Where the agent leaves, on the host, the runtime its runs execute (one folder per image) and their output. */
export const HOST_DIR = '/var/lib/node-maint/agent';
/** Where the agent's runs write their metrics (--textfile-dir, the agent's choice, never a request's). */
export const TEXTFILE_DIR = join(HOST_DIR, 'metrics');
/** The last run's audit there: its verdict goes into the node's facts. */
export const AUDIT_FILE = join(TEXTFILE_DIR, AUDIT_TEXTFILE);
/** Where a run's credentials go on the host: tmpfs, root only, gone at the next boot (a new boot gets new ones). */
export const HOST_SECRETS_DIR = '/run/node-maint/agent';
/** The image's own Node.js, its loader and libraries and the bundled CLI (runbooks/agent-image.mjs builds it). */
export const IMAGE_DIR = '/opt/node-maint';

const NSENTER = ['-t', '1', '-m', '-u', '-i', '-n', '-p', '--'];
/**
 * The host's own programs, by their absolute paths: the image's nsenter is busybox's, which runs its own applet for
 * a bare name it has one for (its sh, its dpkg, which knows no --compare-versions) instead of the host's program.
 */
const HOST = { sh: '/bin/sh', systemctl: '/usr/bin/systemctl', systemdRun: '/usr/bin/systemd-run', dpkg: '/usr/bin/dpkg', dpkgQuery: '/usr/bin/dpkg-query' };

/** A command on the host (PID 1's namespaces), its output; said with the host's words when it fails. */
async function onHost(args: string[], timeoutMs = 30_000): Promise<string> {
  try {
    const { stdout } = await exec('nsenter', [...NSENTER, ...args], { timeout: timeoutMs });
    return stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new RunbookError('preflight', `on the host: ${args.join(' ')}: ${(err.stderr || err.message).trim().split('\n').slice(-3).join(' | ')}`, { cause: e });
  }
}

/** The host's boot as the runbook tells boots apart (kernel boot_id and PID 1's start: a node in a container too). */
export const bootId = async () => parseBootIdentity(await onHost([HOST.sh, '-c', BOOT_IDENTITY_SCRIPT]));

/**
 * The image's runtime copied to the host once per image; the folder the unit runs it from. Called as a run starts,
 * when no other run of this node's agent is under way: the runtimes of earlier images (about 110 MB each) go.
 */
export async function stageRuntime(): Promise<string> {
  const version = (await readFile(join(IMAGE_DIR, 'VERSION'), 'utf8')).trim();
  const dir = join(HOST_DIR, `runtime-${version}`);
  if (!(await stat(join(dir, 'VERSION')).catch(() => undefined))) {
    await rm(`${dir}.tmp`, { recursive: true, force: true });
    await cp(IMAGE_DIR, `${dir}.tmp`, { recursive: true });
    await rm(dir, { recursive: true, force: true });
    await rename(`${dir}.tmp`, dir);
  }
  for (const old of await readdir(HOST_DIR)) if (old.startsWith('runtime-') && join(HOST_DIR, old) !== dir) await rm(join(HOST_DIR, old), { recursive: true, force: true });
  return dir;
}

/** The run's stderr (its progress, published as it comes) and its stdout (its report, published when it ends). */
export const outputFile = (id: string) => join(HOST_DIR, 'runs', `${id}.log`);
export const reportFile = (id: string) => join(HOST_DIR, 'runs', `${id}.out`);
/** What the run is to do, as the agent built it from the request's checked fields (the unit's command line carries none). */
export const requestFile = (id: string) => join(HOST_DIR, 'runs', `${id}.request.json`);
export const kubeconfigFile = (id: string) => join(HOST_SECRETS_DIR, `${id}.kubeconfig`);
export const tokenFile = (id: string) => join(HOST_SECRETS_DIR, `${id}.token`);

/** The run's token (renewed in place while the run goes on: its kubeconfig reads the file again) and its kubeconfig. */
export async function writeCredentials(id: string, token: string, kubeconfig?: string): Promise<void> {
  await mkdir(HOST_SECRETS_DIR, { recursive: true, mode: 0o700 });
  // Written whole, then moved into place: the run never reads half a token.
  await writeFile(`${tokenFile(id)}.tmp`, token, { mode: 0o600 });
  await rename(`${tokenFile(id)}.tmp`, tokenFile(id));
  if (kubeconfig !== undefined) await writeFile(kubeconfigFile(id), kubeconfig, { mode: 0o600 });
}

export async function forgetCredentials(id: string): Promise<void> {
  await Promise.all([kubeconfigFile(id), tokenFile(id)].map((f) => rm(f, { force: true })));
}

/** The run's command and arguments, for its unit to read (root only). */
export async function writeRequest(id: string, run: { command: string; args: string[] }): Promise<void> {
  await mkdir(join(HOST_DIR, 'runs'), { recursive: true });
  await writeFile(requestFile(id), JSON.stringify(run), { mode: 0o600 });
}

/** The output of the node's last `keep` runs is kept (their .log and .out), older runs' goes: a node runs for years. */
export async function pruneRuns(dir = join(HOST_DIR, 'runs'), keep = 20): Promise<void> {
  const newest = new Map<string, number>(); // a run's id -> the time of its newest file
  for (const file of await readdir(dir).catch(() => [] as string[])) {
    const at = (await stat(join(dir, file)).catch(() => undefined))?.mtimeMs ?? 0;
    const id = file.replace(/\.(log|out|request\.json)$/, '');
    newest.set(id, Math.max(newest.get(id) ?? 0, at));
  }
  const old = [...newest].sort(([, a], [, b]) => b - a).slice(keep).map(([id]) => id);
  await Promise.all(old.flatMap((id) => ['log', 'out', 'request.json'].map((ext) => rm(join(dir, `${id}.${ext}`), { force: true }))));
}

/**
 * The run as a transient unit of the host's systemd: its own Node.js through its own loader (the host needs none),
 * reading what to do from its request file; its output appended to files on the host, its exit status kept after it
 * ends (RemainAfterExit) until the agent has published it and removes the unit. Nothing a request says is on this
 * command line (systemd expands `$` and `%` in it): the run's id is the agent's own hex.
 */
export async function startUnit(unit: string, runtime: string, id: string): Promise<void> {
  if (!/^[0-9a-f]{8,40}$/.test(id)) throw new RunbookError('internal', `not a run id the agent makes: ${JSON.stringify(id)}`);
  await mkdir(join(HOST_DIR, 'runs'), { recursive: true });
  await pruneRuns();
  await onHost([
    HOST.systemdRun, `--unit=${unit}`, '--description=node-maint run started by its agent', '--property=RemainAfterExit=yes',
    `--property=StandardOutput=append:${reportFile(id)}`, `--property=StandardError=append:${outputFile(id)}`, '--property=Type=exec',
    // A stop of the unit ends the run's own process only: an apt or dpkg it left going at its safe point finishes.
    '--property=KillMode=process',
    // A shutdown (the run's own reboot) stops it like a SIGTERM: its stop is said within 30 s, not the default 90 s.
    '--property=TimeoutStopSec=30',
    join(runtime, 'lib', 'ld.so'), '--library-path', join(runtime, 'lib'), join(runtime, 'bin', 'node'), join(runtime, 'app', 'dist', 'agent', 'unit.js'), id,
  ]);
}

/** The run units systemd knows on the host now (this boot's), by name. */
export async function runUnits(): Promise<string[]> {
  const out = await onHost([HOST.systemctl, 'list-units', '--all', '--no-legend', '--plain', 'node-maint-run-*']);
  return out.split('\n').map((l) => l.trim().split(/\s+/)[0]!).filter((u) => /^node-maint-run-[0-9a-f]+\.service$/.test(u)).map((u) => u.replace(/\.service$/, ''));
}

/** How many processes are left in the unit's cgroup (an apt the run left going at a stop), or undefined: none to read. */
export async function unitProcesses(unit: string): Promise<number | undefined> {
  const cgroup = (await onHost([HOST.systemctl, 'show', `${unit}.service`, '--property=ControlGroup', '--value'])).trim();
  if (!/^\/[A-Za-z0-9@._/-]*$/.test(cgroup)) return undefined;
  // cgroup v1 (systemd's own hierarchy), hybrid, or v2.
  const script = `for d in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do f="$d${cgroup}/cgroup.procs"; if [ -f "$f" ]; then wc -l < "$f"; exit 0; fi; done; echo none`;
  const n = (await onHost([HOST.sh, '-c', script])).trim();
  return /^\d+$/.test(n) ? Number(n) : undefined;
}

/** A package's installed version on the host (held or not: "hi", "ii"), or undefined (not installed, half installed). */
export async function installedVersion(pkg: string): Promise<string | undefined> {
  const out = await onHost([HOST.dpkgQuery, '-W', '--showformat=${db:Status-Abbrev}|${Version}', pkg]).catch(() => '');
  const [status = '', version] = out.split('|');
  // The second letter is dpkg's state of the package: i, installed (the first is what is wanted: install or hold).
  return status[1] === 'i' && status[2] === ' ' && version ? version : undefined;
}

/** dpkg's own order of versions: is `a` older than `b`? */
export async function olderThan(a: string, b: string): Promise<boolean> {
  return exec('nsenter', [...NSENTER, HOST.dpkg, '--compare-versions', a, 'lt', b], { timeout: 30_000 }).then(
    () => true,
    (e: { code?: number }) => (e.code === 1 ? false : Promise.reject(new RunbookError('preflight', `on the host: dpkg --compare-versions ${a} lt ${b} failed`, { cause: e }))),
  );
}

export interface UnitState {
  /** false: systemd has no such unit (never started, removed, or the node rebooted since). */
  known: boolean;
  running: boolean;
  /** The run's exit code once it ended. */
  exit?: number;
}

export async function unitState(unit: string): Promise<UnitState> {
  const out = await onHost([HOST.systemctl, 'show', `${unit}.service`, '--property=LoadState,ActiveState,SubState,ExecMainCode,ExecMainStatus,ExecMainPID']);
  const p = Object.fromEntries(out.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  if (p.LoadState !== 'loaded') return { known: false, running: false };
  const running = p.SubState === 'running' || p.SubState === 'start';
  if (running || p.ActiveState === 'activating') return { known: true, running: true };
  // ExecMainCode 1 is an exit (its status the code); 2 and 3 a signal (said as 128 + signal, as a shell does).
  const status = Number(p.ExecMainStatus);
  return { known: true, running: false, exit: p.ExecMainCode === '1' ? status : 128 + status };
}

/** Folders removed on the host itself (where they are no mount), and their parents if nothing else is left in them. */
export async function removeFromHost(dirs: string[]): Promise<void> {
  const parents = [...new Set(dirs.map((d) => join(d, '..')))];
  await onHost(['/bin/rm', '-rf', '--one-file-system', ...dirs]);
  await onHost(['/bin/rmdir', '--ignore-fail-on-non-empty', ...parents]).catch(() => undefined);
}

/** A read-only script on the host (its facts), its output. */
export const readOnHost = (script: string) => onHost([HOST.sh, '-c', script], 60_000);

/** The host is shutting down (a reboot the run asked): what ends now is not the run's end, the next boot goes on. */
export async function shuttingDown(): Promise<boolean> {
  // It exits non-zero for every state but "running", and prints the state either way.
  const state = await exec('nsenter', [...NSENTER, HOST.systemctl, 'is-system-running'], { timeout: 30_000 }).then(
    (r) => r.stdout,
    (e: { stdout?: string }) => e.stdout ?? '',
  );
  return state.trim() === 'stopping';
}

/** The operator's stop, passed to the run as the signal it would get in a terminal. */
export async function signalUnit(unit: string, signal: string): Promise<void> {
  await onHost([HOST.systemctl, 'kill', '--kill-who=main', `--signal=${signal}`, `${unit}.service`]);
}

/** The ended run's unit gone from systemd (stopped, its failed state reset); a unit systemd does not know is no error. */
export async function removeUnit(unit: string): Promise<void> {
  await onHost([HOST.systemctl, 'stop', `${unit}.service`]).catch(() => undefined);
  await onHost([HOST.systemctl, 'reset-failed', `${unit}.service`]).catch(() => undefined);
}

/** The run's progress from `offset` on (bytes), as far as it was written. */
export async function readOutput(id: string, offset: number): Promise<Buffer> {
  const all = await readFile(outputFile(id)).catch(() => Buffer.alloc(0));
  return all.subarray(offset);
}

/** The run's report: the tail of its stdout that fits in the ConfigMap. */
export async function readReport(id: string): Promise<string> {
  const all = await readFile(reportFile(id)).catch(() => Buffer.alloc(0));
  return all.subarray(Math.max(0, all.length - 512 * 1024)).toString();
}
