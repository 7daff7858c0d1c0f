import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { transportSpec } from '../../../src/cli/connect.js';

// SSH as operators have it: their ~/.ssh/config's entry for the node, a key only in ssh-agent; what the tool cannot
// honour is refused by name (issue 36). The bed's tests (test 16) run a node through both.
function homeWith(config?: string, keys: string[] = []): string {
  const home = mkdtempSync(join(tmpdir(), 'ssh-access-'));
  mkdirSync(join(home, '.ssh'));
  if (config !== undefined) writeFileSync(join(home, '.ssh', 'config'), config);
  for (const k of keys) writeFileSync(join(home, '.ssh', k), 'key');
  return home;
}
const internalIp = async () => '10.0.0.9';

describe('how the CLI reaches a node over SSH', () => {
  it("takes what the flags leave out from ~/.ssh/config's entry for the node's name, as ssh NODE would", async () => {
    const home = homeWith('Host node-a\n  HostName 10.0.0.5\n  User ops\n  Port 2200\n  IdentityFile ~/.ssh/ops_key\n  ProxyJump jumper@jump.example:2022\n\nHost *\n  User fallback\n');
    expect(await transportSpec({}, internalIp, { home, node: 'node-a', agent: '' })).toEqual({
      kind: 'ssh',
      host: '10.0.0.5',
      port: 2200,
      user: 'ops',
      privateKeyPath: `${home}/.ssh/ops_key`,
      knownHostsPath: `${home}/.ssh/known_hosts`,
      bastion: { host: 'jump.example', port: 2022, user: 'jumper' },
    });
    // The flags win; a node without an entry of its own gets `Host *`'s and the InternalIP.
    expect(await transportSpec({ 'ssh-user': 'maint', 'ssh-port': '22' }, internalIp, { home, node: 'node-a', agent: '' })).toMatchObject({ user: 'maint', port: 22, host: '10.0.0.5' });
    expect(await transportSpec({}, internalIp, { home, node: 'node-b', agent: '' })).toMatchObject({ host: '10.0.0.9', user: 'fallback', port: 22, privateKeyPath: `${home}/.ssh/id_ed25519` });
  });

  it('offers the agent (SSH_AUTH_SOCK) after the key file, and the agent alone when there is no key file', async () => {
    expect(await transportSpec({}, internalIp, { home: homeWith(undefined, ['id_ed25519']), node: 'n', agent: '/run/agent.sock' })).toMatchObject({ privateKeyPath: expect.stringMatching(/id_ed25519$/), agent: '/run/agent.sock' });
    const agentOnly = await transportSpec({}, internalIp, { home: homeWith(), node: 'n', agent: '/run/agent.sock' });
    expect(agentOnly).toMatchObject({ agent: '/run/agent.sock' });
    expect(agentOnly).not.toHaveProperty('privateKeyPath');
  });

  it('refuses by name what it cannot honour: a ProxyCommand, a user certificate, a chain of jumps', async () => {
    await expect(transportSpec({}, internalIp, { home: homeWith('Host node-a\n  ProxyCommand nc %h %p\n'), node: 'node-a', agent: '' })).rejects.toThrow(/gives node-a a ProxyCommand, which this tool does not support/);
    await expect(transportSpec({}, internalIp, { home: homeWith('Host *\n  CertificateFile ~/.ssh/id-cert.pub\n'), node: 'node-a', agent: '' })).rejects.toThrow(/a CertificateFile, which this tool does not support/);
    await expect(transportSpec({}, internalIp, { home: homeWith('Host node-a\n  ProxyJump a,b\n'), node: 'node-a', agent: '' })).rejects.toThrow(/ProxyJump of more than one hop \(a,b\)/);
  });
});
