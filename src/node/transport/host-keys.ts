import { createHash } from 'node:crypto';
import type { ServerHostKeyAlgorithm } from 'ssh2';
import { RunbookError } from '../../errors.js';
import { hostPattern, matchesHost, parseKnownHosts } from './known-hosts.js';

// Which host keys one connection may accept, decided from known_hosts before connecting: the server is offered only
// the key types listed for the host, and the key it then shows must be listed for the host and revoked nowhere.

/** ssh2's host-key algorithm names for each known_hosts key type, in ssh2's own order of preference. */
const ALGORITHMS: Record<string, readonly ServerHostKeyAlgorithm[]> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
};

export interface HostKeyPolicy {
  /** Host-key algorithms to offer the server: only those of the keys listed for the host. Empty when refused. */
  algorithms: ServerHostKeyAlgorithm[];
  /** Why no connection may be tried at all: the host is not listed, or listed only by a CA or with revoked keys. */
  refusal?: RunbookError;
  /** Undefined when the key the server showed may be accepted; otherwise why it is refused. */
  check(key: Buffer): RunbookError | undefined;
}

export interface HostKeyPolicyOptions {
  knownHosts: string;
  host: string;
  port: number;
  /** Named in messages. */
  knownHostsPath: string;
}

/** As ssh-keygen -l prints it. */
export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

export function hostKeyPolicy({ knownHosts, host, port, knownHostsPath }: HostKeyPolicyOptions): HostKeyPolicy {
  const name = hostPattern(host, port);
  const entries = parseKnownHosts(knownHosts);
  // A revoked key is refused for every host, whatever the @revoked line's host patterns (stricter than ssh, which
  // reads only the lines matching the host): its private key is known to be out of our hands.
  const revokedAt = (key: Buffer) => entries.find((e) => e.marker === '@revoked' && e.key.equals(key));
  const forHost = entries.filter((e) => e.marker !== '@revoked' && matchesHost(e.patterns, host, port));
  const plain = forHost.filter((e) => e.marker === undefined);
  const usable = plain.filter((e) => ALGORITHMS[e.keyType] && !revokedAt(e.key));

  const refuse = (message: string): HostKeyPolicy => {
    const refusal = new RunbookError('hostKey', message);
    return { algorithms: [], refusal, check: () => refusal };
  };
  if (forHost.length === 0) return refuse(`${name} is not in ${knownHostsPath}; add its host key first`);
  if (plain.length === 0) {
    // ssh2 verifies plain host keys only: it cannot negotiate OpenSSH host certificates (*-cert-v01@openssh.com).
    const scan = `ssh-keyscan${port === 22 ? '' : ` -p ${port}`} ${host}`;
    return refuse(`${knownHostsPath} lists ${name} only under @cert-authority, and host certificates are not supported (ssh2 verifies plain host keys); add the host's own key (${scan}, after checking its fingerprint)`);
  }
  if (usable.length === 0) {
    const revoked = plain.filter((e) => revokedAt(e.key));
    if (revoked.length > 0) return refuse(`every host key ${knownHostsPath} lists for ${name} is revoked (${revoked.map((e) => fingerprint(e.key)).join(', ')}); add its current key`);
    const types = [...new Set(plain.map((e) => e.keyType))].join(', ');
    return refuse(`${knownHostsPath} lists ${name} only with key types ssh2 does not verify (${types}); add an ed25519, ecdsa or rsa host key`);
  }

  return {
    algorithms: Object.entries(ALGORITHMS).flatMap(([type, names]) => (usable.some((e) => e.keyType === type) ? [...names] : [])),
    check(key) {
      const revoked = revokedAt(key);
      if (revoked) return new RunbookError('hostKey', `the host key of ${name} (${fingerprint(key)}) is revoked: ${knownHostsPath} line ${revoked.line} marks it @revoked, and it is never accepted`);
      if (usable.some((e) => e.key.equals(key))) return undefined;
      return new RunbookError('hostKey', `the host key of ${name} (${fingerprint(key)}) does not match ${knownHostsPath} (possible man-in-the-middle)`);
    },
  };
}
