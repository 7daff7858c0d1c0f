import { availableVersionsScript, cleanVersions, installedScript, parseAvailableVersions, parsePackageDb } from '../node/packages/index.js';
import { parsePendingUpgrades, pendingTargets, PENDING_UPGRADES_SCRIPT } from '../node/packages/pending.js';
import { parseRebootRequired, rebootRequiredScript } from '../node/reboot.js';
import { command, quote, run } from '../node/transport/index.js';
import type { NodeConnection } from './apply.js';
import { withTransport } from './connection.js';
import { FACTS_MAX_AGE_MS, type LastAudit, type NodeFacts } from '../agent/facts.js';
import { FACTS_READ_MS } from '../agent/facts-loop.js';

// The program's read-only look at a node, in one round trip: the target packages' installed versions and, for those
// not at their target, the versions its package sources offer (so preview fails on a version no node can install).
export interface ObservedNode {
  /** Each target package's installed version, or 'not installed'. */
  installed: Record<string, string>;
  /** For each package not at its target: what its sources offer. */
  offered: Record<string, string[]>;
  /** With reboot: if-required, why the node wants a reboot (absent: it does not). */
  rebootRequired?: string;
  /** Through the agents: the leak audit of the last run its agent started (absent: none yet). */
  lastAudit?: LastAudit;
  /** Through the agents: when the agent wrote these facts (it reads them every few minutes, writes them on a change). */
  factsAt?: string;
  /** With pendingUpgrades: the node's own targets, what apt has pending on it (none: nothing to install). */
  pending?: Record<string, string>;
}

const SPLIT = '@@node-maint-offered';
const REBOOT_SPLIT = '@@node-maint-reboot';

/** The sentinel is read only for reboot: if-required (its command, if the operator gave one). */
export interface RebootAsk {
  sentinelCommand?: string;
}

/** `pending`: the node's targets are what apt has pending on it (of that origin), read first in the same session. */
export async function observeNode(connection: NodeConnection, sshKey: string | undefined, fleetTargets: Record<string, string>, reboot?: RebootAsk, pending?: { origin?: string }): Promise<ObservedNode> {
  return withTransport(connection, sshKey, async (transport) => {
    const targets = pending ? pendingTargets(parsePendingUpgrades(await run(transport, PENDING_UPGRADES_SCRIPT)), pending.origin) : fleetTargets;
    const packages = Object.keys(targets);
    // The sources are asked only for a package not cleanly at its target (apt-cache costs the node CPU, fleets are
    // large): one a killed run left half-configured there is the run's to finish, and must be offered.
    const offers = Object.entries(targets).map(
      ([p, v]) => `case "$(dpkg-query -W -f='\${Version} \${db:Status-Abbrev}' ${command(p)} 2>/dev/null)" in ${quote(`${v} ii `)}|${quote(`${v} hi `)}) ;; *) ${availableVersionsScript([p])} ;; esac`,
    );
    const sentinel = reboot ? [`echo ${REBOOT_SPLIT}`, rebootRequiredScript(reboot.sentinelCommand)] : [];
    const out = await run(transport, [packages.length > 0 ? `{ ${installedScript(packages)}; } || true` : 'true', `echo ${SPLIT}`, ...offers, 'true', ...sentinel].join('\n'));
    const [observedPart = '', rebootPart] = out.split(`${REBOOT_SPLIT}\n`);
    const [dpkg = '', madison = ''] = observedPart.split(`${SPLIT}\n`);
    const clean = cleanVersions(parsePackageDb(dpkg.split('\n').filter(Boolean), [], false));
    const available = parseAvailableVersions(madison);
    const installed = Object.fromEntries(packages.map((p) => [p, clean[p] || 'not installed']));
    const offered = Object.fromEntries(packages.filter((p) => installed[p] !== targets[p]).map((p) => [p, [...(available.get(p) ?? [])]]));
    const rebootRequired = rebootPart === undefined ? undefined : parseRebootRequired(rebootPart, reboot?.sentinelCommand);
    return { installed, offered, ...(rebootRequired ? { rebootRequired } : {}), ...(pending ? { pending: targets } : {}) };
  });
}

/** "node-a: containerd 1.6.99 is not offered by its package sources (they offer: ...)" for each target a node cannot install. */
export function notOffered(node: string, seen: ObservedNode, targets: Record<string, string>): string[] {
  return Object.entries(seen.offered)
    .filter(([p]) => !seen.offered[p]!.includes(targets[p]!))
    .map(([p, versions]) => `${node}: ${p} ${targets[p]} is not offered by its package sources (they offer: ${versions.join(', ') || 'none'})`);
}

/**
 * What a node's agent published, as the program's look at it: a node whose agent published nothing, or nothing of
 * late, is not observed (said why), so the fleet stops as for a node SSH cannot reach.
 */
export function observedFromFacts(node: string, facts: NodeFacts | undefined, targets: Record<string, string>, readReboot: boolean, now = Date.now()): ObservedNode | string {
  if (!facts) return `no facts from a node-maint agent on it (access: agent; its DaemonSet is runbooks/agent/)`;
  const age = now - Date.parse(facts.at);
  if (!(age <= FACTS_MAX_AGE_MS)) return `its agent's facts are ${Math.round(age / 60_000)} min old (from ${facts.at}; an agent writes them when they change and at least hourly: is it running?)`;
  const unknown = Object.keys(targets).filter((p) => !(p in facts.installed));
  if (unknown.length > 0) return `its agent does not report ${unknown.join(', ')} (it reports ${Object.keys(facts.installed).join(', ')}: NODE_MAINT_PACKAGES in its DaemonSet)`;
  const installed = Object.fromEntries(Object.keys(targets).map((p) => [p, facts.installed[p]!]));
  const offered = Object.fromEntries(Object.keys(targets).filter((p) => installed[p] !== targets[p]).map((p) => [p, facts.offered[p] ?? []]));
  return { installed, offered, ...(readReboot && facts.rebootRequired ? { rebootRequired: facts.rebootRequired } : {}), ...(facts.lastAudit ? { lastAudit: facts.lastAudit } : {}), factsAt: facts.at };
}

/** "facts 3 min old (...)": what a plan made from an agent's facts rests on, as the preview says it. */
export function describeFactsAge(at: string, now = Date.now()): string {
  const minutes = Math.max(0, Math.round((now - Date.parse(at)) / 60_000));
  return `facts ${minutes} min old (written ${at}; its agent reads the node every ${FACTS_READ_MS / 60_000} min and writes them when they change: a change since its last read is not seen)`;
}

/** "clean (2026-11-29T04:00:00.000Z)", "2 finding(s) (...)": a node's last audit as the preview says it. */
export const describeLastAudit = (a: LastAudit | undefined) =>
  !a ? 'none by its agent yet' : `${a.verdict === 'clean' ? 'clean' : a.verdict === 'leaks' ? `${a.findings} finding(s)` : 'could not verify'} (${a.at})`;

/** One line over the fleet's last audits through the agents: how many clean, and the nodes whose audit was not. */
export function summarizeLastAudits(nodes: Array<[string, LastAudit | undefined]>): string {
  const named = (list: string[]) => (list.length === 0 ? '' : ` (${list.slice(0, 10).join(', ')}${list.length > 10 ? `, and ${list.length - 10} more` : ''})`);
  const of = (test: (a: LastAudit | undefined) => boolean) => nodes.filter(([, a]) => test(a)).map(([n]) => n);
  const leaks = of((a) => a?.verdict === 'leaks');
  const unverifiable = of((a) => a?.verdict === 'unverifiable');
  const none = of((a) => a === undefined);
  return `the last audits their agents ran: ${of((a) => a?.verdict === 'clean').length} clean, ${leaks.length} with findings${named(leaks)}, ${unverifiable.length} could not verify${named(unverifiable)}, ${none.length} none yet${named(none)}`;
}
