import { existsSync, readFileSync } from 'node:fs';
import SSHConfig from 'ssh-config';
import { usageError } from '../errors.js';

// What the operator's ~/.ssh/config says of a host, as `ssh NAME` would read it: the keys this tool can honour, and a
// clear refusal of the ones it cannot (a ProxyCommand, a chain of jumps, a user certificate), never a silent skip.

export interface SshConfigEntry {
  hostName?: string;
  user?: string;
  port?: string;
  identityFile?: string;
  /** ProxyJump's one hop: [user@]host[:port]. */
  jump?: { host: string; port?: number; user?: string };
}

/** The entry for `name` in the config file at `path` (none when there is no file or no block matches but `Host *`'s). */
export function sshConfigFor(path: string, name: string, home: string): SshConfigEntry {
  if (!existsSync(path)) return {};
  const computed = SSHConfig.parse(readFileSync(path, 'utf8')).compute(name) as Record<string, string | string[] | undefined>;
  const one = (key: string) => {
    const v = computed[key];
    return Array.isArray(v) ? v[0] : v;
  };
  for (const refused of ['ProxyCommand', 'CertificateFile']) {
    if (one(refused) !== undefined) throw usageError(`${path} gives ${name} a ${refused}, which this tool does not support: give --ssh-host, --ssh-port, --ssh-user, --ssh-key and --ssh-bastion instead`);
  }
  const proxyJump = one('ProxyJump');
  if (proxyJump?.includes(',')) throw usageError(`${path} gives ${name} a ProxyJump of more than one hop (${proxyJump}), which this tool does not support: one bastion only`);
  const identity = one('IdentityFile');
  return {
    hostName: one('HostName'),
    user: one('User'),
    port: one('Port'),
    identityFile: identity && identity.replace(/^~(?=\/)/, home),
    jump: proxyJump && proxyJump !== 'none' ? parseJump(proxyJump) : undefined,
  };
}

function parseJump(spec: string): SshConfigEntry['jump'] {
  const at = spec.lastIndexOf('@');
  const [host = '', port] = spec.slice(at + 1).split(':');
  return { host, ...(port ? { port: Number(port) } : {}), ...(at > 0 ? { user: spec.slice(0, at) } : {}) };
}
