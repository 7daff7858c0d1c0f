import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { RunbookError } from '../../../src/errors.js';
import { fingerprint, hostKeyPolicy } from '../../../src/node/transport/host-keys.js';
import { blob, DSA, ECDSA, ED_A, ED_B, ED_CA, HASHED_10_1_2_3_2200, HASHED_NODE7, RSA } from './host-key-fixtures.js';

const PATH = '/home/ops/.ssh/known_hosts';
const policy = (knownHosts: string, host: string, port = 22) => hostKeyPolicy({ knownHosts, host, port, knownHostsPath: PATH });
const { SUPPORTED_SERVER_HOST_KEY } = createRequire(import.meta.url)('ssh2/lib/protocol/constants.js') as { SUPPORTED_SERVER_HOST_KEY: string[] };

describe('hostKeyPolicy: what is offered', () => {
  it.each([
    // known_hosts, host, port, algorithms offered
    [`node-1 ${ED_A}`, 'node-1', 22, ['ssh-ed25519']],
    [`node-1 ${ECDSA}`, 'node-1', 22, ['ecdsa-sha2-nistp256']],
    [`node-1 ${RSA}`, 'node-1', 22, ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa']],
    [`node-1 ${RSA}\nnode-1 ${ED_A}\nnode-1 ${ECDSA}`, 'node-1', 22, ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa']],
    // another host's ecdsa key is not offered for node-1
    [`node-1 ${ED_A}\nnode-2 ${ECDSA}`, 'node-1', 22, ['ssh-ed25519']],
    // a CA key's type is not offered: ssh2 cannot use host certificates
    [`node-1 ${ED_A}\n@cert-authority * ${ECDSA}`, 'node-1', 22, ['ssh-ed25519']],
    // a revoked key's type is not offered
    [`node-1 ${ED_A}\nnode-1 ${ECDSA}\n@revoked * ${ECDSA}`, 'node-1', 22, ['ssh-ed25519']],
    [`${HASHED_NODE7} ${ED_A}`, 'node-7.prod', 22, ['ssh-ed25519']],
    [`${HASHED_10_1_2_3_2200} ${ECDSA}`, '10.1.2.3', 2200, ['ecdsa-sha2-nistp256']],
    [`*.prod,!db.prod ${ED_A}`, 'web.prod', 22, ['ssh-ed25519']],
  ])('%s -> %s:%i offers %j', (knownHosts, host, port, algorithms) => {
    const p = policy(knownHosts, host, port);
    expect(p.refusal).toBeUndefined();
    expect(p.algorithms).toEqual(algorithms);
    for (const name of p.algorithms) expect(SUPPORTED_SERVER_HOST_KEY).toContain(name);
  });
});

describe('hostKeyPolicy: the key the server shows', () => {
  it.each([
    // known_hosts, host, the key the server shows, accepted or the refusal
    [`node-1,10.0.0.5 ${ED_A}`, '10.0.0.5', ED_A, undefined],
    [`node-1 ${ED_A}\nnode-1 ${ECDSA}`, 'node-1', ECDSA, undefined],
    [`${HASHED_NODE7} ${ED_A}`, 'node-7.prod', ED_A, undefined],
    [`node-1 ${ED_A}`, 'node-1', ED_B, /the host key of node-1 \(SHA256:\S+\) does not match \/home\/ops\/.ssh\/known_hosts \(possible man-in-the-middle\)/],
    // listed for another host only
    [`node-1 ${ED_A}\nnode-2 ${ED_B}`, 'node-1', ED_B, /does not match/],
    // a CA key is no host key: showing the CA key itself is refused
    [`node-1 ${ED_A}\n@cert-authority node-1 ${ED_B}`, 'node-1', ED_B, /does not match/],
    // revoked on a line for any host, even though node-1 lists it plainly too
    [`node-1 ${ED_A}\nnode-1 ${ED_B}\n@revoked * ${ED_B}`, 'node-1', ED_B, /the host key of node-1 \(SHA256:\S+\) is revoked: \/home\/ops\/.ssh\/known_hosts line 3 marks it @revoked/],
    [`node-1 ${ED_A}\nnode-1 ${ED_B}\n@revoked old-node ${ED_B}`, 'node-1', ED_B, /is revoked/],
    // revoked and not listed for the host: still named as revoked, the graver finding
    [`node-1 ${ED_A}\n@revoked * ${ED_B}`, 'node-1', ED_B, /is revoked/],
  ])('%s, %s shows %s: %s', (knownHosts, host, shown, refusal) => {
    const p = policy(knownHosts, host);
    expect(p.refusal).toBeUndefined();
    const verdict = p.check(blob(shown));
    if (refusal === undefined) return expect(verdict).toBeUndefined();
    expect(verdict).toBeInstanceOf(RunbookError);
    expect(verdict).toMatchObject({ code: 'hostKey', message: expect.stringMatching(refusal) });
  });

  it('names the fingerprint as ssh-keygen -l does', () => {
    // ssh-keygen -lf hostA.pub: 256 SHA256:... hostA (ED25519)
    expect(fingerprint(blob(ED_A))).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });
});

describe('hostKeyPolicy: refused before connecting', () => {
  it.each([
    // known_hosts, host, port, refusal
    ['', 'node-1', 22, /^node-1 is not in \/home\/ops\/.ssh\/known_hosts; add its host key first$/],
    [`node-1 ${ED_A}`, 'node-2', 22, /^node-2 is not in/],
    [`node-1 ${ED_A}`, 'node-1', 2222, /^\[node-1\]:2222 is not in/],
    [`*.prod,!db.prod ${ED_A}`, 'db.prod', 22, /^db.prod is not in/],
    [`${HASHED_NODE7} ${ED_A}`, 'node-8.prod', 22, /is not in/],
    // a line that only revokes does not make a host known
    [`@revoked node-1 ${ED_A}`, 'node-1', 22, /^node-1 is not in/],
    [
      `@cert-authority *.prod ${ED_CA}`,
      'web.prod',
      22,
      /lists web.prod only under @cert-authority, and host certificates are not supported \(ssh2 verifies plain host keys\); add the host's own key \(ssh-keyscan web.prod,/,
    ],
    [`@cert-authority [*.prod]:2200 ${ED_CA}\n@revoked * ${ED_A}`, 'web.prod', 2200, /only under @cert-authority.*ssh-keyscan -p 2200 web.prod/],
    [`node-1 ${ED_A}\n@revoked * ${ED_A}`, 'node-1', 22, /^every host key \/home\/ops\/.ssh\/known_hosts lists for node-1 is revoked \(SHA256:\S+\); add its current key$/],
    [`node-1 ${DSA}`, 'node-1', 22, /lists node-1 only with key types ssh2 does not verify \(ssh-dss\)/],
  ])('%s, %s:%i', (knownHosts, host, port, refusal) => {
    const p = policy(knownHosts, host, port);
    expect(p.algorithms).toEqual([]);
    expect(p.refusal).toMatchObject({ code: 'hostKey', message: expect.stringMatching(refusal) });
    // whatever the server would show, it is refused
    expect(p.check(blob(ED_A))).toBe(p.refusal);
  });
});
