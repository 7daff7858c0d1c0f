import { availableVersionsScript, cleanVersions, installedScript, parseAvailableVersions, parsePackageDb } from '../node/packages/index.js';
import { command, quote, run } from '../node/transport/index.js';
import type { NodeConnection } from './apply.js';
import { withTransport } from './connection.js';

// The program's read-only look at a node, in one round trip: the target packages' installed versions and, for those
// not at their target, the versions its package sources offer (so preview fails on a version no node can install).
export interface ObservedNode {
  /** Each target package's installed version, or 'not installed'. */
  installed: Record<string, string>;
  /** For each package not at its target: what its sources offer. */
  offered: Record<string, string[]>;
}

const SPLIT = '@@node-maint-offered';

export async function observeNode(connection: NodeConnection, sshKey: string | undefined, targets: Record<string, string>): Promise<ObservedNode> {
  const packages = Object.keys(targets);
  return withTransport(connection, sshKey, async (transport) => {
    // The sources are asked only for a package not at its target (apt-cache costs the node CPU, fleets are large).
    const offers = Object.entries(targets).map(([p, v]) => `dpkg-query -W -f='\${Version}' ${command(p)} 2>/dev/null | grep -qxF ${quote(v)} || { ${availableVersionsScript([p])}; }`);
    const out = await run(transport, [`{ ${installedScript(packages)}; } || true`, `echo ${SPLIT}`, ...offers, 'true'].join('\n'));
    const [dpkg = '', madison = ''] = out.split(`${SPLIT}\n`);
    const clean = cleanVersions(parsePackageDb(dpkg.split('\n').filter(Boolean), [], false));
    const available = parseAvailableVersions(madison);
    const installed = Object.fromEntries(packages.map((p) => [p, clean[p] || 'not installed']));
    const offered = Object.fromEntries(packages.filter((p) => installed[p] !== targets[p]).map((p) => [p, [...(available.get(p) ?? [])]]));
    return { installed, offered };
  });
}

/** "node-a: containerd 1.6.99 is not offered by its package sources (they offer: ...)" for each target a node cannot install. */
export function notOffered(node: string, seen: ObservedNode, targets: Record<string, string>): string[] {
  return Object.entries(seen.offered)
    .filter(([p]) => !seen.offered[p]!.includes(targets[p]!))
    .map(([p, versions]) => `${node}: ${p} ${targets[p]} is not offered by its package sources (they offer: ${versions.join(', ') || 'none'})`);
}
