import { createHmac } from 'node:crypto';

// known_hosts lookups for SSH host key verification: plain and hashed (|1|salt|hash) host patterns, [host]:port form.
export interface KnownHostKey {
  keyType: string;
  key: Buffer;
}

export function hostPattern(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

function matchesHashed(entry: string, name: string): boolean {
  const [, magic, salt, hash] = entry.split('|');
  if (magic !== '1' || !salt || !hash) return false;
  return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
}

function matchesPattern(patterns: string, name: string): boolean {
  if (patterns.startsWith('|')) return matchesHashed(patterns, name);
  let matched = false;
  for (const pattern of patterns.split(',')) {
    const negated = pattern.startsWith('!');
    const glob = negated ? pattern.slice(1) : pattern;
    const regex = new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
    if (regex.test(name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

/** The keys known_hosts lists for host:port; @revoked entries are never returned, @cert-authority lines are skipped. */
export function knownKeysFor(knownHosts: string, host: string, port: number): KnownHostKey[] {
  const name = hostPattern(host, port);
  const keys: KnownHostKey[] = [];
  for (const raw of knownHosts.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('@')) continue;
    const [patterns, keyType, keyBase64] = line.split(/\s+/);
    if (!patterns || !keyType || !keyBase64) continue;
    if (matchesPattern(patterns, name)) keys.push({ keyType, key: Buffer.from(keyBase64, 'base64') });
  }
  return keys;
}
