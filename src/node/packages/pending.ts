// The upgrades apt has pending on the node, as targets: what unattended-upgrades would install, planned by apt's own
// simulation (`apt-get -s upgrade`: held packages kept back, nothing new installed or removed, no lock taken), then
// installed, kept for rollback and proven like any --to.

/** An origin as apt-get -s names it beside a version (Debian-Security:12/stable-security): what a request may pick. */
export const ORIGIN_PATTERN = /^[A-Za-z0-9._:/-]{1,128}$/;

/** apt's simulation of `apt-get upgrade` (read-only). */
export const PENDING_UPGRADES_SCRIPT = 'LC_ALL=C apt-get -s -q upgrade 2>&1';

export interface PendingUpgrade {
  name: string;
  from: string;
  to: string;
  /** Where apt takes it from: "Debian-Security:12/stable-security", one per source offering it. */
  origins: string[];
}

/** Each `Inst NAME [FROM] (TO ORIGIN, ORIGIN [ARCH])` line of the simulation. */
export function parsePendingUpgrades(text: string): PendingUpgrade[] {
  const pending: PendingUpgrade[] = [];
  for (const line of text.split('\n')) {
    const m = /^Inst (\S+) \[(\S+)\] \((\S+) (.*) \[[^\]]+\]\)/.exec(line);
    if (m) pending.push({ name: m[1]!, from: m[2]!, to: m[3]!, origins: m[4]!.split(', ') });
  }
  return pending;
}

/** The pending upgrades as targets, those of an origin only when one is given (a substring of one of its origins). */
export function pendingTargets(pending: PendingUpgrade[], origin?: string): Record<string, string> {
  return Object.fromEntries(pending.filter((p) => origin === undefined || p.origins.some((o) => o.includes(origin))).map((p) => [p.name, p.to]));
}
