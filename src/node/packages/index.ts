import { command, quote } from '../transport/quote.js';
import { run, type Transport } from '../transport/index.js';
import type { PackageDb, PackageRecord } from '../state/types.js';

// The node's package manager (apt and dpkg: the only one tested; RPM nodes are refused in preflight): what versions
// are installed and available, and the script that installs exact ones.

/** Where install logs go on the node: apt's output is never streamed back, so a lost session cannot cut it off. */
export const LOG_DIR = '/var/lib/node-maint/log';

/** Installed versions as dpkg records them (as `apt-cache madison` prints them), with dpkg's status abbreviation. */
export function installedScript(packages: string[]): string {
  const names = packages.map((p) => command(p)).join(' ');
  return `command -v dpkg-query >/dev/null 2>&1 && dpkg-query -W -f='\${Package}\\t\${Version}\\t\${db:Status-Abbrev}\\n' ${names} 2>/dev/null`;
}

/** Who holds dpkg's locks now, by /proc/locks (read-only: taking the lock to test it would race the holder). */
export const LOCK_HOLDERS_SCRIPT = `for f in /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock; do
  [ -e "$f" ] && awk -v i=":$(stat -c %i "$f")" '$2 != "->" && substr($6, length($6) - length(i) + 1) == i {print $5}' /proc/locks 2>/dev/null
done | sort -u | while read -r p; do [ "$p" -gt 0 ] 2>/dev/null && printf '%s\\t%s\\n' "$p" "$(tr '\\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-120)"; done`;

export const DPKG_INTERRUPTED_SCRIPT = `[ -n "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ] && echo interrupted`;

// dpkg's status letter (second of db:Status-Abbrev) to what it means for us.
const DPKG_STATUS: Record<string, PackageRecord['status']> = {
  i: 'installed',
  W: 'installed',
  t: 'installed',
  H: 'half-installed',
  U: 'unpacked',
  F: 'half-configured',
  c: 'config-files',
  n: 'not-installed',
};

/** "containerd\t1.6.20~ds1-1+deb12u2\thi " lines, and the lock and interruption sections, into a PackageDb. */
export function parsePackageDb(lines: string[], lockLines: string[], interrupted: boolean): PackageDb {
  const records: Record<string, PackageRecord> = {};
  for (const line of lines) {
    const [name, version, abbrev = ''] = line.split('\t');
    if (!name) continue;
    records[name] = { version: version ?? '', held: abbrev[0] === 'h', status: DPKG_STATUS[abbrev[1] ?? 'n'] ?? 'not-installed' };
  }
  const lockHolders = lockLines.flatMap((l) => {
    const [pid, cmd = ''] = l.split('\t');
    return Number(pid) > 0 ? [{ pid: Number(pid), command: cmd.trim() }] : [];
  });
  return { records, interrupted, lockHolders };
}

/** Installed and configured versions only: a half-installed package is not "at" any version. */
export function cleanVersions(db: PackageDb): Record<string, string> {
  return Object.fromEntries(Object.entries(db.records).filter(([, r]) => r.status === 'installed' && r.version).map(([n, r]) => [n, r.version]));
}

/** The cleanly installed version of each package ('' where none), from dpkg alone: a version check needs no state read. */
export async function readInstalledVersions(transport: Transport, packages: string[]): Promise<Record<string, string>> {
  const text = await run(transport, `{ ${installedScript(packages)}; } || true`);
  const clean = cleanVersions(parsePackageDb(text.split('\n').filter(Boolean), [], false));
  return Object.fromEntries(packages.map((p) => [p, clean[p] ?? '']));
}

/** Packages a dpkg run interrupted or failed on, as "containerd (half-configured)". */
export function brokenPackages(db: PackageDb): string[] {
  return Object.entries(db.records)
    .filter(([, r]) => r.status === 'half-installed' || r.status === 'unpacked' || r.status === 'half-configured')
    .map(([n, r]) => `${n} ${r.version} (${r.status})`);
}

export const lockMessage = (db: PackageDb) => db.lockHolders.map((h) => `PID ${h.pid} (${h.command || '?'})`).join(', ');

/** A script that prints "<package>\t<version>" for every version the package sources offer. */
export function availableVersionsScript(packages: string[]): string {
  return `for p in ${packages.map((p) => command(p)).join(' ')}; do apt-cache madison "$p" 2>/dev/null | awk -F'|' -v p="$p" '{gsub(/ /,"",$2); print p "\\t" $2}'; done`;
}

export function parseAvailableVersions(text: string): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const [name, version] = line.split('\t');
    if (!name || !version) continue;
    if (!map.has(name)) map.set(name, new Set());
    map.get(name)!.add(version);
  }
  return map;
}

export interface InstallOptions {
  /** Packages to hold again afterwards, whatever the outcome (the operator's holds outlive our install). */
  hold: string[];
  lockTimeoutSeconds: number;
  /** .deb files on the node to install instead of asking the sources for that package's version (a rollback's). */
  files?: Record<string, string>;
}

/** What apt would do for an install: each package it installs or changes (from: '' when new), and each it removes. */
export interface InstallSimulation {
  changes: Array<{ name: string; from: string; to: string }>;
  removals: Array<{ name: string; version: string }>;
}

const APT_FLAGS = '--allow-downgrades --allow-change-held-packages -o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-confdef';
const specsOf = (versions: Record<string, string>, files: Record<string, string> = {}) =>
  Object.entries(versions).map(([p, v]) => (files[p] ? quote(files[p]!) : command(`${p}=${v}`))).join(' ');

/** apt-get's simulation of the install (-s: nothing changes, no lock taken). */
export function simulateInstallScript(versions: Record<string, string>): string {
  return `LC_ALL=C apt-get -s -q install ${APT_FLAGS} ${specsOf(versions)} 2>&1`;
}

/** Reads apt-get -s's "Inst NAME [OLD] (NEW ...)" and "Remv NAME [OLD]" lines. */
export function parseInstallSimulation(text: string): InstallSimulation {
  const changes: InstallSimulation['changes'] = [];
  const removals: InstallSimulation['removals'] = [];
  for (const line of text.split('\n')) {
    const inst = /^Inst (\S+) (?:\[(\S+)\] )?\((\S+)/.exec(line);
    if (inst) changes.push({ name: inst[1]!, from: inst[2] ?? '', to: inst[3]! });
    const remv = /^Remv (\S+)(?: \[(\S+)\])?/.exec(line);
    if (remv) removals.push({ name: remv[1]!, version: remv[2] ?? '' });
  }
  return { changes, removals };
}

/** The installed packages apt's plan changes besides the targets (a newer runc), at their versions now. */
export function changedAlongside(simulation: InstallSimulation, targets: Record<string, string>): Record<string, string> {
  return Object.fromEntries(simulation.changes.filter((c) => targets[c.name] === undefined && c.from).map((c) => [c.name, c.from]));
}

/** apt's file name for a package version: an epoch's colon is written %3a. */
export const debFileGlob = (name: string, version: string) => `${name}_${version.replace(/:/g, '%3a')}_*.deb`;

/**
 * Keeps each package's .deb at that version in DIR, from apt's archive cache or else downloaded from the sources; prints
 * "kept NAME PATH" for each one kept and "missing NAME" for each it could not get. Run before the install replaces them.
 */
export function keepDebsScript(versions: Record<string, string>, dir: string): string {
  return [
    `d=${quote(dir)}; mkdir -p "$d"`,
    ...Object.entries(versions).map(([p, v]) => {
      const glob = debFileGlob(p, v);
      return `f=$(ls "$d"/${glob} /var/cache/apt/archives/${glob} 2>/dev/null | head -n 1)
if [ -z "$f" ]; then (cd "$d" && apt-get download -q ${command(`${p}=${v}`)} >/dev/null 2>&1); f=$(ls "$d"/${glob} 2>/dev/null | head -n 1); fi
case "$f" in "") echo ${command(`missing ${p}`)} ;; "$d"/*) echo "kept ${p} $f" ;; *) cp "$f" "$d/" && echo "kept ${p} $d/$(basename "$f")" ;; esac`;
    }),
  ].join('\n');
}

export function parseKeptDebs(text: string): { kept: Record<string, string>; missing: string[] } {
  const kept: Record<string, string> = {};
  const missing: string[] = [];
  for (const line of text.split('\n')) {
    const k = /^kept (\S+) (\S+)$/.exec(line);
    if (k) kept[k[1]!] = k[2]!;
    const m = /^missing (\S+)$/.exec(line);
    if (m) missing.push(m[1]!);
  }
  return { kept, missing };
}

/** Prints "NAME" for each package whose version is in apt's archive cache (a rollback could install it offline). */
export function cachedDebsScript(versions: Record<string, string>): string {
  return [...Object.entries(versions).map(([p, v]) => `ls /var/cache/apt/archives/${debFileGlob(p, v)} >/dev/null 2>&1 && echo ${command(p)}`), 'true'].join('; ');
}

/**
 * Installs exactly these versions (up or down), non-interactively, keeping the node's config files. Output goes to a
 * log on the node and only its tail comes back. An interrupted dpkg (a killed run of ours) is completed first.
 */
export function installScript(versions: Record<string, string>, options: InstallOptions): string {
  const log = `${LOG_DIR}/install-$(date +%s).log`;
  const head = ['set -u', `mkdir -p ${LOG_DIR}`, `log=${log}`, 'rc=0'];
  // On failure, what apt and dpkg said went wrong (a maintainer script's own words among it), not the log's tail.
  const tail = ['[ $rc = 0 ] || grep -iE "^E:|^dpkg:|error|fail|refus" "$log" | grep -v "set on hold" | tail -n 5 >&2', `echo "log: $log" >&2`, 'exit $rc'];
  const specs = specsOf(versions, options.files);
  const lock = `-o DPkg::Lock::Timeout=${options.lockTimeoutSeconds}`;
  return [
    ...head,
    'export DEBIAN_FRONTEND=noninteractive',
    `if ${DPKG_INTERRUPTED_SCRIPT} >/dev/null; then dpkg --force-confold --force-confdef --configure -a >>"$log" 2>&1 || true; fi`,
    // --reinstall: a package a killed dpkg left half-installed at the very version wanted is otherwise "already there".
    `apt-get install -y -q ${lock} --reinstall ${APT_FLAGS} ${specs} >>"$log" 2>&1 || rc=$?`,
    ...(options.hold.length > 0 ? [`apt-mark hold ${options.hold.map((p) => command(p)).join(' ')} >>"$log" 2>&1 || [ $rc != 0 ] || rc=1`] : []),
    ...tail,
  ].join('\n');
}

/** Prints "NAME lt|eq|gt" for each package, comparing FROM with TO as dpkg orders versions. */
export function compareVersionsScript(changes: Array<[name: string, from: string, to: string]>): string {
  return [
    ...changes.map(([p, from, to]) => `if dpkg --compare-versions ${command(from)} lt ${command(to)}; then echo ${command(p)} lt; elif dpkg --compare-versions ${command(from)} eq ${command(to)}; then echo ${command(p)} eq; else echo ${command(p)} gt; fi`),
    'true',
  ].join('\n');
}

/** What a change of versions was, by dpkg's order: upgraded, downgraded, both at once (changed), or none (maintained). */
export function changeKind(comparisons: string[]): 'upgraded' | 'downgraded' | 'changed' | 'maintained' {
  const up = comparisons.includes('lt');
  const down = comparisons.includes('gt');
  return up && down ? 'changed' : up ? 'upgraded' : down ? 'downgraded' : 'maintained';
}

export function refreshScript(lockTimeoutSeconds: number): string {
  return `apt-get update -q -o DPkg::Lock::Timeout=${lockTimeoutSeconds} >/dev/null`;
}
