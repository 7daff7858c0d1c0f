import { createHmac } from 'node:crypto';

// known_hosts as ssh reads it (sshd(8), SSH_KNOWN_HOSTS FILE FORMAT): an optional marker, only as the first field;
// host patterns (plain, with * ? and !negation, or one hashed |1|salt|hash); key type; base64 key; comment.
export type KnownHostsMarker = '@cert-authority' | '@revoked';

export interface KnownHostsEntry {
  /** 1-based line number, for messages. */
  line: number;
  marker?: KnownHostsMarker;
  patterns: string;
  keyType: string;
  /** The key blob in SSH wire format, as a server presents it during key exchange. */
  key: Buffer;
}

const MARKERS: readonly string[] = ['@cert-authority', '@revoked'] satisfies KnownHostsMarker[];

export function hostPattern(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** The key type a blob names (its first SSH string), or undefined for a malformed blob. */
function blobKeyType(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const length = blob.readUInt32BE(0);
  return blob.length >= 4 + length ? blob.subarray(4, 4 + length).toString('latin1') : undefined;
}

/** Every well-formed line; comments, blank lines, unknown markers and malformed lines are left out, as ssh does. */
export function parseKnownHosts(text: string): KnownHostsEntry[] {
  const entries: KnownHostsEntry[] = [];
  text.split('\n').forEach((raw, index) => {
    const fields = raw.trim().split(/\s+/);
    if (fields[0] === '' || fields[0]!.startsWith('#')) return;
    const marker = fields[0]!.startsWith('@') ? fields.shift()! : undefined;
    if (marker !== undefined && !MARKERS.includes(marker)) return;
    const [patterns, keyType, keyBase64] = fields;
    if (!patterns || !keyType || !keyBase64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(keyBase64)) return;
    const key = Buffer.from(keyBase64, 'base64');
    // ssh refuses a line whose key blob names another type than the line does.
    if (blobKeyType(key) !== keyType) return;
    entries.push({ line: index + 1, ...(marker ? { marker: marker as KnownHostsMarker } : {}), patterns, keyType, key });
  });
  return entries;
}

function matchesHashed(entry: string, name: string): boolean {
  const [, magic, salt, hash] = entry.split('|');
  if (magic !== '1' || !salt || !hash) return false;
  return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
}

/** Whether a line's host patterns cover host:port; host names compare case-insensitively, as ssh lowercases them. */
export function matchesHost(patterns: string, host: string, port: number): boolean {
  const name = hostPattern(host.toLowerCase(), port);
  if (patterns.startsWith('|')) return matchesHashed(patterns, name);
  let matched = false;
  for (const pattern of patterns.split(',')) {
    const negated = pattern.startsWith('!');
    const glob = negated ? pattern.slice(1) : pattern;
    const regex = new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 'i');
    if (regex.test(name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}
