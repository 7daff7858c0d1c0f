import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
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
  it.concurrent('a key only in ssh-agent (SSH_AUTH_SOCK): the run reaches the node with it; without the agent, no key, said', onLeasedNode('any', async (t) => {
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
