import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { transportSpec } from '../../src/cli/connect.js';
import { bed, DRAIN_FLAGS, upgradeNode } from './bed.js';
import { report } from './faults.js';
import { nodeFingerprint } from './fixtures.js';
import { onLeasedNode, type TestNode } from './pool.js';

// SSH as operators have it (issue 36): a key kept only in ssh-agent, a host reached through the operator's
// ~/.ssh/config, a passphrase-protected key without an agent (refused by name, nothing changed). Each a dry run of
// upgrade-node over a real sshd, from a HOME of its own with no key file in it.
const exec = promisify(execFile);

/** The node's flags without the key: how it is reached, its user, known_hosts. */
const withoutKey = (t: TestNode) => t.flags.filter((f, i) => f !== '--ssh-key' && t.flags[i - 1] !== '--ssh-key');
const dryRun = (t: TestNode, flags: string[], env: NodeJS.ProcessEnv) => upgradeNode([t.name, '--dry-run', '--output', 'json', ...DRAIN_FLAGS, '--to', `containerd=${bed().containerd.new}`, ...flags], { env: { SSH_AUTH_SOCK: '', ...env } });

/** An empty HOME with an .ssh directory, removed after `fn`. */
async function inHome(fn: (home: string) => Promise<void>): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'node-maint-home-'));
  mkdirSync(join(home, '.ssh'), { mode: 0o700 });
  try {
    await fn(home);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

describe('SSH as operators have it', () => {
  it.concurrent('a key only in ssh-agent (SSH_AUTH_SOCK): the run reaches the node with it; without the agent, or with it empty, no key, said', onLeasedNode('any', async (t) => {
    await inHome(async (home) => {
      const sock = join(home, 'agent.sock');
      const { stdout } = await exec('ssh-agent', ['-a', sock, '-s']);
      const pid = Number(/SSH_AGENT_PID=(\d+)/.exec(stdout)![1]);
      try {
        await exec('ssh-add', [bed().sshKey], { env: { ...process.env, SSH_AUTH_SOCK: sock } });
        const viaAgent = await dryRun(t, withoutKey(t), { HOME: home, SSH_AUTH_SOCK: sock });
        expect(viaAgent.code, viaAgent.stderr).toBe(0);
        expect(report(viaAgent).dryRun).toBe(true);
        const without = await dryRun(t, withoutKey(t), { HOME: home });
        expect(without.code).toBe(2);
        expect(without.stderr).toContain(`cannot read the SSH key ${home}/.ssh/id_ed25519`);
        // An agent that holds nothing is said as such, not as keys the server refused.
        await exec('ssh-add', ['-D'], { env: { ...process.env, SSH_AUTH_SOCK: sock } });
        const empty = await dryRun(t, withoutKey(t), { HOME: home, SSH_AUTH_SOCK: sock });
        expect(empty.code).toBe(7);
        expect(empty.stderr).toContain(`: no key to offer: ssh-agent (${sock}) holds none, and no key file was named or found`);
      } finally {
        process.kill(pid, 'SIGTERM');
      }
    });
  }));

  it.concurrent("~/.ssh/config's entry for the node (HostName, Port, User, IdentityFile): the node's name alone reaches it", onLeasedNode('any', async (t) => {
    await inHome(async (home) => {
      const at = (flag: string) => t.flags[t.flags.indexOf(flag) + 1]!;
      copyFileSync(at('--known-hosts'), join(home, '.ssh', 'known_hosts'));
      writeFileSync(join(home, '.ssh', 'config'), `Host ${t.name}\n  HostName ${at('--ssh-host')}\n  Port ${at('--ssh-port')}\n  User ${at('--ssh-user')}\n  IdentityFile ${bed().sshKey}\n`);
      const result = await dryRun(t, ['--kubeconfig', at('--kubeconfig')], { HOME: home });
      expect(result.code, result.stderr).toBe(0);
      expect(report(result).dryRun).toBe(true);
    });
  }));

  // Issue 43 item 3's fixture, beside OpenSSH on the same files: the node's own sshd is the jump host (an alias with
  // its own HostName, Port, key and known_hosts), a second sshd in the node on 127.0.0.1:2222 (its own host key) the
  // target, which only the jump reaches; the user from an Include, the port from a Match, two IdentityFiles of which the
  // first is a key the server refuses, the target's known_hosts by a token.
  it.concurrent('a jump through a second sshd, an Include and a Match: `ssh -G` and the tool agree, and both log in the same way', onLeasedNode('any', async (t) => {
    await inHome(async (home) => {
      const at = (flag: string) => t.flags[t.flags.indexOf(flag) + 1]!;
      const ssh = join(home, '.ssh');
      await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(ssh, 'refused_key')]);
      mkdirSync(join(ssh, 'keys'));
      copyFileSync(bed().sshKey, join(ssh, 'keys', t.name));
      mkdirSync(join(ssh, 'conf.d'));
      writeFileSync(join(ssh, 'conf.d', '10-users.conf'), `Host ${t.name} jump-a\n  User ${bed().sshUser}\n`);
      writeFileSync(join(ssh, 'config'), [
        'Include conf.d/*.conf',
        'Host jump-a',
        `  HostName 127.0.0.1\n  Port ${at('--ssh-port')}\n  IdentityFile ${bed().sshKey}\n  UserKnownHostsFile ${bed().knownHosts}`,
        `Match originalhost ${t.name} user ${bed().sshUser}`,
        '  Port 2222',
        `Host ${t.name}`,
        `  HostName 127.0.0.1\n  ProxyJump jump-a\n  IdentitiesOnly yes\n  UserKnownHostsFile ${ssh}/kh_%n`,
        `  IdentityFile ${ssh}/refused_key\n  IdentityFile ${ssh}/keys/%n`,
        '',
      ].join('\n'));
      const sshG = async (host: string) => {
        const { stdout } = await exec('ssh', ['-G', '-F', join(ssh, 'config'), host], { env: { ...process.env, HOME: home } });
        return Object.fromEntries(stdout.trim().split('\n').map((l) => [l.split(' ')[0], l.slice(l.indexOf(' ') + 1)]));
      };
      const [g, j] = [await sshG(t.name), await sshG('jump-a')];
      const spec = await transportSpec({}, async () => 'unused', { home, node: t.name, agent: '' });
      expect(spec).toEqual({
        kind: 'ssh',
        host: g.hostname,
        port: Number(g.port),
        user: g.user,
        privateKeyPaths: [`${ssh}/refused_key`, `${ssh}/keys/${t.name}`],
        knownHostsPath: g.userknownhostsfile!.split(' ')[0]!.replace('%n', t.name),
        bastion: { host: j.hostname, port: Number(j.port), user: j.user, privateKeyPaths: [j.identityfile], agent: undefined, knownHostsPath: j.userknownhostsfile!.split(' ')[0] },
      });
      expect([g.port, g.proxyjump, g.identitiesonly]).toEqual(['2222', 'jump-a', 'yes']);

      // Before the second sshd is there: the jump host cannot reach the node, said so (exit 5), and the run ends.
      writeFileSync(join(ssh, `kh_${t.name}`), '');
      const noTarget = await dryRun(t, ['--kubeconfig', at('--kubeconfig')], { HOME: home });
      expect(noTarget.code, noTarget.stderr).toBe(5);
      expect(noTarget.stderr).toContain(`the jump host [127.0.0.1]:${at('--ssh-port')} cannot reach [127.0.0.1]:2222`);
      // The second sshd, started as a person would and ended by its PID.
      const log = '/run/nm-test-sshd-2222.log';
      await t.sh(`ssh-keygen -q -t ed25519 -N '' -f /run/nm-test-sshd-hk <<<y >/dev/null; rm -f ${log}
        /usr/sbin/sshd -p 2222 -o ListenAddress=127.0.0.1 -h /run/nm-test-sshd-hk -o PidFile=/run/nm-test-sshd.pid -o LogLevel=VERBOSE -E ${log}`);
      try {
        const hostKey = (await t.sh('cat /run/nm-test-sshd-hk.pub')).trim().split(' ').slice(0, 2).join(' ');
        const tool = () => dryRun(t, ['--kubeconfig', at('--kubeconfig')], { HOME: home });
        const openssh = () => exec('ssh', ['-F', join(ssh, 'config'), '-o', 'BatchMode=yes', t.name, 'true'], { env: { ...process.env, HOME: home } }).then(() => 0, (e) => e.code);
        // The target's known_hosts by its token, holding another key: both refuse it.
        const jumpsKey = readFileSync(bed().knownHosts, 'utf8').split('\n').find((l) => l.startsWith(`[127.0.0.1]:${at('--ssh-port')} ssh-ed25519 `))!;
        writeFileSync(join(ssh, `kh_${t.name}`), `[127.0.0.1]:2222 ${jumpsKey.split(' ').slice(1).join(' ')}\n`);
        const wrongKey = await tool();
        expect(wrongKey.code, wrongKey.stderr).toBe(6);
        expect(wrongKey.stderr).toContain(`${ssh}/kh_${t.name}`);
        expect(await openssh()).toBe(255);
        writeFileSync(join(ssh, `kh_${t.name}`), `[127.0.0.1]:2222 ${hostKey}\n`);
        const result = await tool();
        expect(result.code, result.stderr).toBe(0);
        expect(report(result).dryRun).toBe(true);
        expect(await openssh()).toBe(0);
        // Both through the jump (from the node's own loopback), each refused the first key and accepted the second.
        const fingerprint = async (key: string) => (await exec('ssh-keygen', ['-l', '-f', key])).stdout.split(' ')[1]!;
        const [refused, accepted] = [await fingerprint(join(ssh, 'refused_key')), await fingerprint(bed().sshKey)];
        const lines = (await t.sh(`cat ${log}`)).split('\n').filter((l) => /(Failed|Accepted) publickey for /.test(l));
        const logins = lines.map((l) => `${/(\w+) publickey for (\S+) from 127\.0\.0\.1/.exec(l)?.slice(1).join(' ')} ${l.includes(refused) ? 'refused_key' : l.includes(accepted) ? 'bed key' : '?'}`);
        expect(logins).toEqual([...Array(2)].flatMap(() => [`Failed ${bed().sshUser} refused_key`, `Accepted ${bed().sshUser} bed key`]));
      } finally {
        await t.sh('kill $(cat /run/nm-test-sshd.pid); rm -f /run/nm-test-sshd-hk /run/nm-test-sshd-hk.pub');
      }
    });
  }));

  it.concurrent('logins refused by /run/nologin (the server ends the session at login): said as such, exit 7; never a silent exit 0', onLeasedNode('any', async (t) => {
    await t.sh('echo "the node is booting" > /run/nologin');
    try {
      const result = await dryRun(t, t.flags, {});
      expect(result.code, result.stderr).toBe(7);
      expect(result.stderr).toContain(': the server closed the connection at login (logins refused: /run/nologin while the node boots or shuts down?)');
    } finally {
      await t.sh('rm -f /run/nologin');
    }
  }));

  it.concurrent('a passphrase-protected key without an agent: refused by name before anything is read or changed', onLeasedNode('any', async (t) => {
    await inHome(async (home) => {
      const key = join(home, '.ssh', 'id_ed25519');
      copyFileSync(bed().sshKey, key);
      await exec('ssh-keygen', ['-p', '-q', '-P', '', '-N', 'a passphrase', '-f', key]);
      const before = await nodeFingerprint(t);
      const result = await dryRun(t, [...withoutKey(t), '--ssh-key', key], { HOME: home });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`the SSH key ${key} is protected by a passphrase, which this tool never asks for: add it to ssh-agent (\`ssh-add ${key}\`) and run with SSH_AUTH_SOCK set`);
      expect(await nodeFingerprint(t)).toEqual(before);
    });
  }));
});
