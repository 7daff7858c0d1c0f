import { command } from '../transport/quote.js';

// The node's package manager: what versions are available, and the command that installs exact versions.
export type PackageManager = 'apt' | 'dnf' | 'yum';

/** A script that prints "<package>\t<version>" for every version the package sources offer. */
export function availableVersionsScript(manager: PackageManager, packages: string[]): string {
  if (manager === 'apt') {
    return `for p in ${packages.map((p) => command(p)).join(' ')}; do apt-cache madison "$p" 2>/dev/null | awk -F'|' -v p="$p" '{gsub(/ /,"",$2); print p "\\t" $2}'; done`;
  }
  return `${manager} -q list --showduplicates ${packages.map((p) => command(p)).join(' ')} 2>/dev/null | awk 'NF==3 {n=$1; sub(/\\.[^.]*$/,"",n); print n "\\t" $2}'`;
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

/** Installs exactly these versions (up or down), non-interactively, keeping the node's own config files. */
export function installScript(manager: PackageManager, versions: Record<string, string>): string {
  const pairs = Object.entries(versions);
  if (manager === 'apt') {
    const specs = pairs.map(([p, v]) => command(`${p}=${v}`)).join(' ');
    return `DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades -o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-confdef ${specs}`;
  }
  const specs = pairs.map(([p, v]) => command(`${p}-${v.replace(/^[0-9]+:/, '')}`)).join(' ');
  return `${manager} -y install --allowerasing ${specs} || ${manager} -y downgrade ${specs}`;
}

export function refreshScript(manager: PackageManager): string {
  return manager === 'apt' ? 'apt-get update -q' : `${manager} -q makecache`;
}
