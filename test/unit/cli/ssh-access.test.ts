import { execFileSync } from 'node:child_process';
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
      privateKeyPaths: [`${home}/.ssh/ops_key`],
      knownHostsPath: `${home}/.ssh/known_hosts`,
      bastion: { host: 'jump.example', port: 2022, user: 'jumper', knownHostsPath: `${home}/.ssh/known_hosts` },
    });
    // The flags win; a node without an entry of its own gets `Host *`'s and the InternalIP.
    expect(await transportSpec({ 'ssh-user': 'maint', 'ssh-port': '22' }, internalIp, { home, node: 'node-a', agent: '' })).toMatchObject({ user: 'maint', port: 22, host: '10.0.0.5' });
    expect(await transportSpec({}, internalIp, { home, node: 'node-b', agent: '' })).toMatchObject({ host: '10.0.0.9', user: 'fallback', port: 22, privateKeyPaths: [`${home}/.ssh/id_ed25519`] });
  });

  // OpenSSH itself (`ssh -G`, which reads the config and connects nowhere) beside the tool, on one fixture that uses
  // every keyword the tool honours: an Include by glob, Match blocks, tokens, a jump host's own entry.
  it('reads an Include, Match, tokens, UserKnownHostsFile, IdentityFiles and a jump alias as `ssh -G` does', async () => {
    const home = homeWith(
      [
        'Include conf.d/*.conf',
        'Host bastion',
        '  HostName 127.0.0.1',
        '  User jumper',
        '  Port 2022',
        'Host node-a node-c !node-x',
        '  IdentityFile ~/.ssh/keys/%h_%p_%r',
        '  IdentityFile %d/.ssh/second_%n',
        '  UserKnownHostsFile ~/.ssh/kh/%n ~/.ssh/kh2',
        '  ProxyJump bastion',
        '  IdentitiesOnly yes',
        'Match originalhost node-a user ops',
        '  Port 2200',
        'Match !host 10.0.0.*',
        '  User nobody-else',
        'Host *',
        '  User fallback',
        '',
      ].join('\n'),
      ['second_node-a'],
    );
    mkdirSync(join(home, '.ssh', 'keys'));
    writeFileSync(join(home, '.ssh', 'keys', '10.0.0.5_2200_ops'), 'key');
    mkdirSync(join(home, '.ssh', 'conf.d'));
    writeFileSync(join(home, '.ssh', 'conf.d', '10-a.conf'), 'Host node-a\n  HostName 10.0.0.5\n  User ops\n');
    writeFileSync(join(home, '.ssh', 'conf.d', '20-b.conf'), 'Host node-a\n  User not-this-one\n  HostName 10.9.9.9\n');
    // ssh -G expands ~ in known_hosts paths from the passwd entry, not $HOME: that part of its words is the test's home.
    const sshG = (host: string) => {
      const out = execFileSync('ssh', ['-G', '-F', join(home, '.ssh', 'config'), host], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: home } });
      const keys: Record<string, string[]> = {};
      for (const [k, ...v] of out.split('\n').map((l) => l.split(' '))) (keys[k!] ??= []).push(v.join(' ').replace(`${process.env.HOME ?? '/root'}/`, `${home}/`));
      return keys;
    };
    const g = sshG('node-a');
    const spec = await transportSpec({}, internalIp, { home, node: 'node-a', agent: '/run/agent.sock' });
    const jump = sshG('bastion');
    expect(spec).toMatchObject({ host: g.hostname![0], user: g.user![0], port: Number(g.port![0]), knownHostsPath: g.userknownhostsfile![0]!.split(' ')[0] });
    expect(spec).toMatchObject({ bastion: { host: jump.hostname![0], user: jump.user![0], port: Number(jump.port![0]) } });
    expect(g.proxyjump).toEqual(['bastion']);
    // ssh expands IdentityFile's tokens when it loads the keys; the tool offers every one that exists, in order, and
    // with IdentitiesOnly not the agent's.
    expect(g.identityfile).toEqual(['~/.ssh/keys/%h_%p_%r', '%d/.ssh/second_%n']);
    expect(g.identitiesonly).toEqual(['yes']);
    expect(spec).toMatchObject({ privateKeyPaths: [`${home}/.ssh/keys/10.0.0.5_2200_ops`, `${home}/.ssh/second_node-a`] });
    expect(spec).not.toHaveProperty('agent');
    // A Match that negates: node-c has no HostName, so `!host 10.0.0.*` holds and its User comes first.
    expect(await transportSpec({}, internalIp, { home, node: 'node-c', agent: '' })).toMatchObject({ user: sshG('node-c').user![0], host: '10.0.0.9' });
    expect(sshG('node-c').user).toEqual(['nobody-else']);
    // The command line wins and Match user sees it, as `ssh -l` does.
    expect(await transportSpec({ 'ssh-user': 'maint' }, internalIp, { home, node: 'node-a', agent: '' })).toMatchObject({ user: 'maint', port: 22 });
    expect(await transportSpec({ 'ssh-bastion': 'ops@10.1.1.1:2222' }, internalIp, { home, node: 'node-a', agent: '' })).toMatchObject({ bastion: { host: '10.1.1.1', port: 2222, user: 'ops' } });
  });

  it("takes `[...]` as a class in an Include's glob and as itself in a Host pattern, as `ssh -G` does", async () => {
    const home = homeWith('Include conf.d/[!x]*.conf\nHost node[1]\n  User bracket\nHost *\n  User fallback\n');
    mkdirSync(join(home, '.ssh', 'conf.d'));
    writeFileSync(join(home, '.ssh', 'conf.d', 'a.conf'), 'Host node1\n  Port 2201\n');
    writeFileSync(join(home, '.ssh', 'conf.d', 'x.conf'), 'Host node1\n  Port 2299\n');
    const g = execFileSync('ssh', ['-G', '-F', join(home, '.ssh', 'config'), 'node1'], { encoding: 'utf8', env: { ...process.env, HOME: home } });
    const said = (key: string) => new RegExp(`^${key} (.*)$`, 'm').exec(g)![1];
    expect([said('user'), said('port')]).toEqual(['fallback', '2201']);
    expect(await transportSpec({}, internalIp, { home, node: 'node1', agent: '' })).toMatchObject({ user: 'fallback', port: 2201 });
  });

  it('offers the agent (SSH_AUTH_SOCK) after the key file, and the agent alone when there is no key file', async () => {
    expect(await transportSpec({}, internalIp, { home: homeWith(undefined, ['id_ed25519']), node: 'n', agent: '/run/agent.sock' })).toMatchObject({ privateKeyPaths: [expect.stringMatching(/id_ed25519$/)], agent: '/run/agent.sock' });
    const agentOnly = await transportSpec({}, internalIp, { home: homeWith(), node: 'n', agent: '/run/agent.sock' });
    expect(agentOnly).toMatchObject({ agent: '/run/agent.sock' });
    expect(agentOnly).not.toHaveProperty('privateKeyPaths');
    // ssh's default keys that exist, in its order, when no IdentityFile is named.
    const both = homeWith(undefined, ['id_ed25519', 'id_rsa']);
    expect(await transportSpec({}, internalIp, { home: both, node: 'n', agent: '' })).toMatchObject({ privateKeyPaths: [`${both}/.ssh/id_rsa`, `${both}/.ssh/id_ed25519`] });
  });

  it("reaches the jump host with its own entry's keys and known_hosts, for ProxyJump and --ssh-bastion alike", async () => {
    const home = homeWith('Host node-a\n  ProxyJump gate\nHost gate\n  HostName 10.2.2.2\n  IdentityFile ~/.ssh/gate_key\n  IdentitiesOnly yes\n  UserKnownHostsFile ~/.ssh/gate_hosts\n', ['gate_key', 'id_ed25519']);
    const gate = { host: '10.2.2.2', port: 22, privateKeyPaths: [`${home}/.ssh/gate_key`], agent: undefined, knownHostsPath: `${home}/.ssh/gate_hosts` };
    const viaConfig = await transportSpec({}, internalIp, { home, node: 'node-a', agent: '/run/agent.sock' });
    expect(viaConfig).toMatchObject({ privateKeyPaths: [`${home}/.ssh/id_ed25519`], agent: '/run/agent.sock', bastion: gate });
    expect(await transportSpec({ 'ssh-bastion': 'ops@gate' }, internalIp, { home, node: 'node-b', agent: '/run/agent.sock' })).toMatchObject({ bastion: { ...gate, user: 'ops' } });
    // A jump host whose entry names no key is reached with the node's, as before.
    const plain = await transportSpec({ 'ssh-bastion': 'plain:2200' }, internalIp, { home, node: 'node-b', agent: '' });
    expect(plain.kind === 'ssh' && plain.bastion).toEqual({ host: 'plain', port: 2200, knownHostsPath: `${home}/.ssh/known_hosts` });
  });

  it('refuses by name what it cannot honour: a ProxyCommand, a user certificate, a chain of jumps', async () => {
    await expect(transportSpec({}, internalIp, { home: homeWith('Host node-a\n  ProxyCommand nc %h %p\n'), node: 'node-a', agent: '' })).rejects.toThrow(/gives node-a a ProxyCommand, which this tool does not support/);
    await expect(transportSpec({}, internalIp, { home: homeWith('Host *\n  CertificateFile ~/.ssh/id-cert.pub\n'), node: 'node-a', agent: '' })).rejects.toThrow(/a CertificateFile, which this tool does not support/);
    await expect(transportSpec({}, internalIp, { home: homeWith('Host node-a\n  ProxyJump a,b\n'), node: 'node-a', agent: '' })).rejects.toThrow(/ProxyJump of more than one hop \(a,b\)/);
    await expect(transportSpec({}, internalIp, { home: homeWith('Host node-a\n  ProxyJump j\nHost j\n  ProxyJump k\n'), node: 'node-a', agent: '' })).rejects.toThrow(/jump host j a ProxyJump of its own \(a chain of jumps\)/);
    // Where it is found: in an included file too; a Match exec is refused, never run.
    const home = homeWith('Include extra\n');
    writeFileSync(join(home, '.ssh', 'extra'), 'Host node-*\n  ProxyCommand nc %h %p\n');
    await expect(transportSpec({}, internalIp, { home, node: 'node-a', agent: '' })).rejects.toThrow(/gives node-a a ProxyCommand/);
    // ... but not from a block that does not apply, which reads nothing of what it includes.
    writeFileSync(join(home, '.ssh', 'config'), 'Host other\n  Include extra\nHost *\n  IdentityFile ${NM_KEYS}/k\n');
    process.env.NM_KEYS = '/keys';
    await expect(transportSpec({}, internalIp, { home, node: 'node-a', agent: '' })).resolves.toMatchObject({ privateKeyPaths: ['/keys/k'] });
    delete process.env.NM_KEYS;
    await expect(transportSpec({}, internalIp, { home, node: 'node-a', agent: '' })).rejects.toThrow(/names the environment variable NM_KEYS, which is not set/);
    const marker = join(home, 'ran');
    await expect(transportSpec({}, internalIp, { home: homeWith(`Match exec "touch ${marker}"\n  User x\n`), node: 'node-a', agent: '' })).rejects.toThrow(/`Match exec`, which this tool does not evaluate/);
    expect(() => execFileSync('test', ['-e', marker])).toThrow();
    await expect(transportSpec({}, internalIp, { home: homeWith('Host *\n  IdentityFile ~/.ssh/%C\n'), node: 'node-a', agent: '' })).rejects.toThrow(/uses %C, which this tool does not expand/);
    const loop = homeWith('Include a\n');
    writeFileSync(join(loop, '.ssh', 'a'), 'Include b\n');
    writeFileSync(join(loop, '.ssh', 'b'), 'Include a\n');
    await expect(transportSpec({}, internalIp, { home: loop, node: 'node-a', agent: '' })).rejects.toThrow(/Include nested deeper than 16 files/);
    await expect(transportSpec({ 'ssh-bastion': 'a,b' }, internalIp, { home: homeWith(), node: 'node-a', agent: '' })).rejects.toThrow(/--ssh-bastion a,b is more than one hop/);
    await expect(transportSpec({ 'ssh-bastion': 'bad user@h' }, internalIp, { home: homeWith(), node: 'node-a', agent: '' })).rejects.toThrow(/invalid --ssh-bastion user "bad user"/);
  });
});
