import { isIP } from 'node:net';
import type { TransportSpec } from '../node/transport/index.js';
import { existsSync } from 'node:fs';
import { usageError } from '../errors.js';
import { parseUserHostPort, sshConfigFor } from './ssh-config.js';

// How to reach a node, from command-line flags: ssh (default), docker exec (kind nodes are containers), or local.
export interface ConnectFlags {
  transport?: string;
  'ssh-host'?: string;
  'ssh-port'?: string;
  'ssh-user'?: string;
  'ssh-key'?: string;
  'known-hosts'?: string;
  'ssh-bastion'?: string;
  container?: string;
  'docker-host'?: string;
}

export const CONNECT_OPTIONS = {
  transport: { type: 'string' },
  'ssh-host': { type: 'string' },
  'ssh-port': { type: 'string' },
  'ssh-user': { type: 'string' },
  'ssh-key': { type: 'string' },
  'known-hosts': { type: 'string' },
  'ssh-bastion': { type: 'string' },
  container: { type: 'string' },
  'docker-host': { type: 'string' },
} as const;

const HOST = /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;
const USER = /^[a-z_][a-z0-9_-]{0,31}$/;
const CONTAINER = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const DOCKER_HOST = /^(unix:\/\/\/[A-Za-z0-9_./-]+|tcp:\/\/[A-Za-z0-9.-]+:\d+)$/;

function host(value: string, flag: string): string {
  if (!HOST.test(value) && isIP(value) === 0) throw usageError(`invalid ${flag} ${JSON.stringify(value)}: expected a host name or IP address`);
  return value;
}

function port(value: string | undefined): number {
  if (value === undefined) return 22;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 65535) throw usageError(`invalid --ssh-port ${JSON.stringify(value)}: expected 1-65535`);
  return n;
}

/**
 * The transport the flags ask for. Over SSH, what the flags leave out is taken as `ssh NAME` would take it: from
 * ~/.ssh/config's entry for --ssh-host, else for the node's name (ssh-config.ts says which keywords), then the
 * defaults (the node's InternalIP, root, 22, ~/.ssh/id_ed25519); ssh-agent's keys (SSH_AUTH_SOCK) are offered after
 * the key file's. --ssh-bastion is [user@]host[:port].
 */
export function transportSpec(
  flags: ConnectFlags,
  defaultHost: () => Promise<string>,
  { home = process.env.HOME ?? '/root', node, agent = process.env.SSH_AUTH_SOCK }: { home?: string; node?: string; agent?: string } = {},
): Promise<TransportSpec> {
  return (async (): Promise<TransportSpec> => {
    const kind = flags.transport ?? (flags.container ? 'docker-exec' : 'ssh');
    if (kind === 'local') return { kind: 'local' };
    if (kind === 'docker-exec') {
      if (!flags.container || !CONTAINER.test(flags.container)) throw usageError(`--transport docker-exec needs --container NAME (got ${JSON.stringify(flags.container ?? '')})`);
      if (flags['docker-host'] && !DOCKER_HOST.test(flags['docker-host'])) throw usageError(`invalid --docker-host ${JSON.stringify(flags['docker-host'])}`);
      return { kind: 'docker-exec', container: flags.container, dockerHost: flags['docker-host'] };
    }
    if (kind !== 'ssh') throw usageError(`unknown --transport ${JSON.stringify(kind)}: ssh, docker-exec or local`);
    const name = flags['ssh-host'] ?? node;
    const context = { home, ...(flags['ssh-user'] ? { user: flags['ssh-user'] } : {}), ...(flags['ssh-port'] ? { port: flags['ssh-port'] } : {}) };
    const config = name ? sshConfigFor(`${home}/.ssh/config`, name, context) : { identityFiles: [], identitiesOnly: false };
    const user = config.user ?? 'root';
    if (!USER.test(user)) throw usageError(`invalid --ssh-user ${JSON.stringify(user)}`);
    const jump = flags['ssh-bastion'] ? parseUserHostPort(flags['ssh-bastion']) : config.jump;
    const from = flags['ssh-bastion'] ? '--ssh-bastion' : 'ProxyJump';
    if (jump?.user !== undefined && !USER.test(jump.user)) throw usageError(`invalid ${from} user ${JSON.stringify(jump.user)}`);
    const bastion = jump && { host: host(jump.host, from), port: port(jump.port?.toString()), ...(jump.user ? { user: jump.user } : {}) };
    const fallbackKey = `${home}/.ssh/id_ed25519`;
    // As ssh: the IdentityFiles that exist, in order (the first one here), else the default key; with an agent and no
    // key file anywhere, the agent's keys alone. IdentitiesOnly keeps the agent's keys out.
    const configured = config.identityFiles.find((f) => existsSync(f)) ?? (agent ? undefined : config.identityFiles[0]);
    const keyPath = flags['ssh-key'] ?? (config.identityFiles.length > 0 ? configured : agent && !existsSync(fallbackKey) ? undefined : fallbackKey);
    const offerAgent = agent && !(config.identitiesOnly && keyPath) ? agent : undefined;
    return {
      kind: 'ssh',
      host: host(config.hostName ?? flags['ssh-host'] ?? (await defaultHost()), '--ssh-host'),
      port: port(config.port),
      user,
      ...(keyPath ? { privateKeyPath: keyPath } : {}),
      ...(offerAgent ? { agent: offerAgent } : {}),
      knownHostsPath: flags['known-hosts'] ?? config.knownHostsFile ?? `${home}/.ssh/known_hosts`,
      bastion,
    };
  })();
}
