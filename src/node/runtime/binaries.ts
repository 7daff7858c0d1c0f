import { command } from '../transport/quote.js';
import { run, type Transport } from '../transport/index.js';

// The binary each runtime unit really runs. The package to upgrade must own it (kind runs /usr/local/bin/containerd,
// which no package upgrade touches), and after the upgrade it must be the new file reporting the target version
// (a daemon not restarted still runs the old, deleted binary while dpkg already says "upgraded").

/** The unit whose daemon a runtime package ships. Packages without a daemon (runc) are not checked. */
export const DAEMON_UNITS: Record<string, string> = {
  containerd: 'containerd',
  'containerd.io': 'containerd',
  'docker.io': 'docker',
  'docker-ce': 'docker',
  'cri-dockerd': 'cri-docker',
};

export interface RunningBinary {
  unit: string;
  pid: number;
  exe: string;
  /** The file was replaced on disk since the daemon started (/proc/PID/exe reads "... (deleted)"). */
  replaced: boolean;
  owners: string[];
  /** The first line of `<exe> --version`. */
  version: string;
}

/** The running binaries of the daemons these packages ship, by unit (none for packages without a daemon). */
export async function runningBinaries(transport: Transport, packages: string[]): Promise<Map<string, RunningBinary>> {
  const units = [...new Set(packages.flatMap((p) => (DAEMON_UNITS[p] ? [DAEMON_UNITS[p]] : [])))];
  return units.length === 0 ? new Map() : parseRunningBinaries(await run(transport, runningBinariesScript(units)));
}

/** One line per running unit: unit, MainPID, /proc/PID/exe, the packages owning that file, its --version. */
export function runningBinariesScript(units: string[]): string {
  return `for u in ${units.map((u) => command(u)).join(' ')}; do
  pid=$(systemctl show -p MainPID "$u" 2>/dev/null | sed -n 's/^MainPID=//p')
  [ "\${pid:-0}" -gt 0 ] 2>/dev/null || continue
  exe=$(readlink "/proc/$pid/exe") || continue
  bin=\${exe% (deleted)}
  owners=$(dpkg -S "$bin" 2>/dev/null | grep -v '^diversion' | sed 's/: .*//; s/:[a-z0-9]*//g; s/ //g' | paste -sd, -)
  printf '%s\\t%s\\t%s\\t%s\\t%s\\n' "$u" "$pid" "$exe" "$owners" "$("$bin" --version 2>&1 | head -n1)"
done`;
}

export function parseRunningBinaries(text: string): Map<string, RunningBinary> {
  const found = new Map<string, RunningBinary>();
  for (const line of text.split('\n')) {
    const [unit, pid, exe = '', owners = '', version = ''] = line.split('\t');
    if (!unit || !(Number(pid) > 0)) continue;
    const replaced = exe.endsWith(' (deleted)');
    found.set(unit, { unit, pid: Number(pid), exe: replaced ? exe.slice(0, -' (deleted)'.length) : exe, replaced, owners: owners.split(',').filter(Boolean), version });
  }
  return found;
}

/** A Debian version without its epoch ("1:1.6.20~ds1-1+deb12u3" -> "1.6.20~ds1-1+deb12u3"). */
const withoutEpoch = (version: string) => version.replace(/^\d+:/, '');

/** Debian's upstream part of a version: no epoch, no revision ("1:1.6.20~ds1-1+deb12u3" -> "1.6.20~ds1"). */
export const upstreamVersion = (version: string) => withoutEpoch(version).replace(/-[^-]*$/, '');

/** Whether a Debian version has a revision ("1.6.20~ds1-1+deb12u3" has; "0.4.3" has not). */
export const hasDebianRevision = (version: string) => upstreamVersion(version) !== withoutEpoch(version);

/** `version` is `base`, or `base` carried on after one of `separators` ("1.6.20-rc1" of "1.6.20" by /[-+~]/). */
const isOrExtends = (version: string, base: string, separators: RegExp) => version === base || (version.startsWith(base) && separators.test(version.slice(base.length, base.length + 1)));

/** Packages whose running daemon they do not provide, each said in one sentence (preflight refuses them). */
export function notRunningFromPackage(targets: string[], running: Map<string, RunningBinary>): string[] {
  return targets.flatMap((p) => {
    const b = running.get(DAEMON_UNITS[p] ?? '');
    if (!b || b.owners.includes(p)) return [];
    return [`upgrading ${p} would not change the running ${b.unit}: it runs ${b.exe}, ${b.owners.length > 0 ? `which belongs to ${b.owners.join(', ')}` : 'which no package owns'}`];
  });
}

/**
 * After an install: each target's daemon runs the package's current file and reports the target version, to the
 * Debian revision where its --version prints one (kubelet's report never does: it cannot tell deb12u2 from deb12u3).
 */
export function notAtTarget(targets: Record<string, string>, running: Map<string, RunningBinary>): string[] {
  return Object.entries(targets).flatMap(([p, v]) => {
    const unit = DAEMON_UNITS[p];
    if (!unit) return [];
    const b = running.get(unit);
    if (!b) return [`${unit} (of ${p}) is not running`];
    if (b.replaced) return [`${unit} still runs the ${b.exe} it started with, which the install replaced (not restarted)`];
    if (!b.owners.includes(p)) return [`${unit} runs ${b.exe}, which ${p} does not own`];
    if (!b.version.includes(upstreamVersion(v))) return [`${unit} reports "${b.version}", not ${upstreamVersion(v)} (${p} ${v})`];
    // A daemon that prints the Debian version it was built as (containerd: "... 1.6.20~ds1 1.6.20~ds1-1+deb12u3") is
    // held to it; a package rebuilt or repacked on top of that version ("...+deb12u3+b1", a site's "+local1") too.
    const built = b.version.split(/[\s,]+/).find((w) => w.startsWith(`${upstreamVersion(v)}-`));
    if (built && !isOrExtends(withoutEpoch(v), built, /[+~.]/)) return [`${unit} reports "${b.version}", not ${withoutEpoch(v)} (${p} ${v})`];
    return [];
  });
}

/** The runtime kubelet reports per package, as "<name>://<version>" in the Node's nodeInfo.containerRuntimeVersion. */
const REPORTED_RUNTIME: Record<string, string> = { containerd: 'containerd', 'containerd.io': 'containerd', 'docker.io': 'docker', 'docker-ce': 'docker' };

export type ReportedRuntime = { status: 'matches' | 'not-applicable' } | { status: 'differs' | 'unreported'; message: string };

/**
 * What the node's own report says of the targets: kubelet's nodeInfo.containerRuntimeVersion must carry the target's
 * upstream version when it names the upgraded runtime. A report that names no runtime kubelet speaks to (kwok's
 * "kwok-0.7.0") is unreported; a target kubelet does not talk to (containerd under cri-dockerd) is not applicable.
 */
export function reportedRuntimeAtTargets(reported: string | undefined, targets: Record<string, string>): ReportedRuntime {
  const match = /^([a-z0-9-]+):\/\/(.+)$/.exec(reported ?? '');
  if (!match) return { status: 'unreported', message: `the node reports its runtime as "${reported ?? ''}", no <runtime>://<version>` };
  const [, name, version] = match;
  const relevant = Object.entries(targets).filter(([p]) => REPORTED_RUNTIME[p] === name);
  if (relevant.length === 0) return { status: 'not-applicable' };
  // Debian's upstream part less its repack marks ("1.6.20~ds1" -> "1.6.20", "20.10.24+dfsg1" -> "20.10.24").
  const release = (v: string) => upstreamVersion(v).split(/[~+]/)[0]!;
  const wrong = relevant.filter(([, v]) => !isOrExtends(version!, release(v), /[-+~]/));
  if (wrong.length > 0) return { status: 'differs', message: `the node reports ${reported}, not ${wrong.map(([p, v]) => `${release(v)} (${p} ${v})`).join(', ')}` };
  return { status: 'matches' };
}
