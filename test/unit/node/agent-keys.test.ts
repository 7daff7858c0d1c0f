import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentKeyTypes, identityTypes } from '../../../src/node/transport/agent-keys.js';

// What a real ssh-agent holds, read as a refused login words it: none, a key, a key with its certificate.
const exec = promisify(execFile);

describe("what ssh-agent holds (for a refused login's words)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-keys-'));
  const sock = join(dir, 'agent.sock');
  let pid = 0;
  beforeAll(async () => {
    pid = Number(/SSH_AGENT_PID=(\d+)/.exec((await exec('ssh-agent', ['-a', sock, '-s'])).stdout)![1]);
  });
  afterAll(() => {
    process.kill(pid, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('says none, then each key and certificate by type; a socket with no agent gives no answer', async () => {
    expect(await agentKeyTypes(sock)).toEqual([]);
    const key = join(dir, 'id_ed25519');
    await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
    await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'ca')]);
    await exec('ssh-keygen', ['-q', '-s', join(dir, 'ca'), '-I', 'ops', '-n', 'ops', `${key}.pub`]);
    // ssh-add adds the certificate beside the key (id_ed25519-cert.pub).
    await exec('ssh-add', [key], { env: { ...process.env, SSH_AUTH_SOCK: sock } });
    expect((await agentKeyTypes(sock))?.sort()).toEqual(['ssh-ed25519', 'ssh-ed25519-cert-v01@openssh.com']);
    expect(await agentKeyTypes(join(dir, 'nothing.sock'))).toBeUndefined();
    // A reply cut short is no answer, never a count.
    expect(identityTypes(Buffer.from([12, 0, 0, 0, 2, 0, 0]))).toBeUndefined();
  });
});
