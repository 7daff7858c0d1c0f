import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SshTransport } from '../../../src/node/transport/ssh.js';

// The keys a connection is given, read before anything is dialled: each file by name, the fleet's inline key as such.
describe('the SSH keys of a connection, read before it dials', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ssh-keys-'));
  const protectedKey = join(dir, 'id_protected');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'a passphrase', '-f', protectedKey]);
  writeFileSync(join(dir, 'known_hosts'), '');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // 127.0.0.1:9 (discard) is never dialled: every refusal here comes first.
  const connect = (o: object) => SshTransport.connect({ host: '127.0.0.1', port: 9, user: 'ops', knownHostsPath: join(dir, 'known_hosts'), ...o });

  it('refuses a protected key by name, a missing one by path, and the inline key as given inline', async () => {
    await expect(connect({ privateKeyPaths: [protectedKey] })).rejects.toThrow(`the SSH key ${protectedKey} is protected by a passphrase, which this tool never asks for: add it to ssh-agent (\`ssh-add ${protectedKey}\`)`);
    await expect(connect({ privateKeyPaths: [join(dir, 'id_rsa'), protectedKey] })).rejects.toThrow(`cannot read the SSH key ${join(dir, 'id_rsa')}`);
    await expect(connect({ privateKey: readFileSync(protectedKey, 'utf8') })).rejects.toThrow('the SSH key given inline is protected by a passphrase, which this tool never asks for: add it to ssh-agent (`ssh-add KEY`)');
    await expect(connect({})).rejects.toThrow('no SSH key given for ops@127.0.0.1');
  });
});
