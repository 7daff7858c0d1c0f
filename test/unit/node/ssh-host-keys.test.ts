import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SshTransport } from '../../../src/node/transport/ssh.js';
import { ED_A } from './host-key-fixtures.js';

// openClient against a real ssh2 server on loopback that holds an ed25519 and an ecdsa host key: what the client
// offers decides which key the server shows, and the key shown is checked against known_hosts.
const typeAndKey = (publicLine: string) => publicLine.split(' ').slice(0, 2).join(' ');

/**
 * A key pair ssh2 can read back: its generateKeyPairSync strips an ed25519 public key's leading zero bytes, so about
 * one key in 256 is malformed (mscdex/ssh2#1513; CI failed 9 cases on one); such a pair is drawn again.
 */
function keyPair(type: 'ed25519' | 'ecdsa'): ReturnType<typeof ssh2.utils.generateKeyPairSync> {
  for (;;) {
    const pair = type === 'ecdsa' ? ssh2.utils.generateKeyPairSync('ecdsa', { bits: 256 }) : ssh2.utils.generateKeyPairSync('ed25519');
    if (!(ssh2.utils.parseKey(pair.private) instanceof Error) && !(ssh2.utils.parseKey(pair.public) instanceof Error)) return pair;
  }
}
const hostEd = keyPair('ed25519');
const hostEcdsa = keyPair('ecdsa');
const clientKey = keyPair('ed25519');

let server: ssh2.Server;
let port = 0;
let dir = '';
const shown: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'node-maint-hostkeys-'));
  server = new ssh2.Server({ hostKeys: [hostEd.private, hostEcdsa.private] }, (conn) => {
    conn.on('handshake', (negotiated) => shown.push(negotiated.serverHostKey));
    conn.on('authentication', (ctx) => ctx.accept());
    conn.on('error', () => {}); // the client hanging up on a refused key
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function connect(knownHosts: string): Promise<{ ok: true } | { ok: false; error: { code?: string; message: string } }> {
  const knownHostsPath = join(dir, `known_hosts-${shown.length}-${Math.random()}`);
  writeFileSync(knownHostsPath, knownHosts);
  try {
    const transport = await SshTransport.connect({ host: '127.0.0.1', port, user: 'root', privateKey: clientKey.private, knownHostsPath, connectTimeoutMs: 5_000 });
    await transport.close();
    return { ok: true };
  } catch (error) {
    return { ok: false, error: error as { code?: string; message: string } };
  }
}

describe('openClient host key checks against a live ssh2 server', () => {
  it('offers only the listed key type, so the server shows that key (not its preferred ed25519)', async () => {
    const before = shown.length;
    expect(await connect(`[127.0.0.1]:${port} ${typeAndKey(hostEcdsa.public)}\n`)).toEqual({ ok: true });
    expect(shown.slice(before)).toEqual(['ecdsa-sha2-nistp256']);
  });

  it('accepts the ed25519 key when that is the one listed', async () => {
    const before = shown.length;
    expect(await connect(`[127.0.0.1]:${port} ${typeAndKey(hostEd.public)}\n`)).toEqual({ ok: true });
    expect(shown.slice(before)).toEqual(['ssh-ed25519']);
  });

  it('refuses a revoked key the server shows, even when known_hosts also lists it plainly', async () => {
    const line = typeAndKey(hostEd.public);
    const result = await connect(`[127.0.0.1]:${port} ${ED_A}\n[127.0.0.1]:${port} ${line}\n@revoked * ${line}\n`);
    expect(result).toMatchObject({ ok: false, error: { code: 'hostKey', message: expect.stringMatching(/is revoked: .* line 3 marks it @revoked/) } });
  });

  it('refuses a key of the listed type that is not the listed key', async () => {
    const result = await connect(`[127.0.0.1]:${port} ${ED_A}\n`);
    expect(result).toMatchObject({ ok: false, error: { code: 'hostKey', message: expect.stringMatching(/does not match .*possible man-in-the-middle/) } });
  });

  it('calls a server that has none of the listed key types a host key mismatch', async () => {
    const edOnly = new ssh2.Server({ hostKeys: [hostEd.private] }, (conn) => conn.on('error', () => {}));
    await new Promise<void>((resolve) => edOnly.listen(0, '127.0.0.1', resolve));
    const edOnlyPort = (edOnly.address() as AddressInfo).port;
    const knownHostsPath = join(dir, 'known_hosts-ecdsa-only');
    writeFileSync(knownHostsPath, `[127.0.0.1]:${edOnlyPort} ${typeAndKey(hostEcdsa.public)}\n`);
    const connecting = SshTransport.connect({ host: '127.0.0.1', port: edOnlyPort, user: 'root', privateKey: clientKey.private, knownHostsPath, connectTimeoutMs: 5_000 });
    await expect(connecting).rejects.toMatchObject({ code: 'hostKey', message: expect.stringMatching(/offers none of the key types listed there \(ecdsa-sha2-nistp256\)/) });
    await new Promise((resolve) => edOnly.close(resolve));
  });

  it('refuses an unknown host without connecting', async () => {
    const before = shown.length;
    const result = await connect(`[127.0.0.1]:${port + 1} ${typeAndKey(hostEd.public)}\n`);
    expect(result).toMatchObject({ ok: false, error: { code: 'hostKey', message: expect.stringMatching(/^\[127.0.0.1\]:\d+ is not in .*add its host key first$/) } });
    expect(shown.length).toBe(before);
  });

  it('refuses a host known only through @cert-authority without connecting', async () => {
    const before = shown.length;
    const result = await connect(`@cert-authority [127.0.0.1]:* ${typeAndKey(hostEd.public)}\n`);
    expect(result).toMatchObject({ ok: false, error: { code: 'hostKey', message: expect.stringMatching(/host certificates are not supported/) } });
    expect(shown.length).toBe(before);
  });
});

// A node that does not answer while the run that rebooted it waits: the transport connects at its first command.
describe('a node that does not answer at connect', () => {
  const closedPort = async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const free = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    return free;
  };
  const options = (p: number, known = hostEd.public) => {
    const knownHostsPath = join(dir, `known_hosts-down-${p}-${Math.random()}`);
    writeFileSync(knownHostsPath, `[127.0.0.1]:${p} ${typeAndKey(known)}\n`);
    return { host: '127.0.0.1', port: p, user: 'root', privateKey: clientKey.private, knownHostsPath, connectTimeoutMs: 5_000 };
  };

  it('is refused (unreachable) unless the caller expects its silence; then the first command connects, and says unreachable while it does not answer', async () => {
    const down = await closedPort();
    await expect(SshTransport.connect(options(down))).rejects.toMatchObject({ code: 'unreachable' });
    await expect(SshTransport.connect(options(down), async () => false)).rejects.toMatchObject({ code: 'unreachable' });
    let asked = 0;
    const transport = await SshTransport.connect(options(down), async () => (asked++, true));
    expect(asked).toBe(1);
    await expect(transport.exec('true')).rejects.toMatchObject({ code: 'unreachable' });
    await transport.close();
  });

  it('never defers a host key refused (another key than the one known): asked nothing', async () => {
    let asked = 0;
    const other = keyPair('ed25519').public;
    await expect(SshTransport.connect(options(port, other), async () => (asked++, true))).rejects.toMatchObject({ code: 'hostKey', message: expect.stringContaining('possible man-in-the-middle') });
    expect(asked).toBe(0);
  });
});
