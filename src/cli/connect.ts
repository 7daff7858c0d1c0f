import { isIP } from 'node:net';
import type { TransportSpec } from '../node/transport/index.js';
import { existsSync } from 'node:fs';
import { usageError } from '../errors.js';
import { jumpEntry, sshConfigFor, type SshConfigEntry } from './ssh-config.js';

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
/** ssh's default keys when no IdentityFile is named, in its order: the types ssh2 can sign with. */
const DEFAULT_KEYS = ['id_rsa', 'id_ecdsa', 'id_ed25519'];
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
    const configPath = `${home}/.ssh/config`;
    const context = { home, ...(flags['ssh-user'] ? { user: flags['ssh-user'] } : {}), ...(flags['ssh-port'] ? { port: flags['ssh-port'] } : {}) };
    const config: SshConfigEntry = name ? sshConfigFor(configPath, name, context) : { identityFiles: [], identitiesOnly: false };
    const user = config.user ?? 'root';
    if (!USER.test(user)) throw usageError(`invalid --ssh-user ${JSON.stringify(user)}`);
    const keys = keysOffered(config, flags['ssh-key'], home, agent);
    const knownHostsPath = flags['known-hosts'] ?? config.knownHostsFile ?? `${home}/.ssh/known_hosts`;
    const jump = flags['ssh-bastion'] ? jumpEntry(configPath, flags['ssh-bastion'], home) : config.jump;
    const from = flags['ssh-bastion'] ? '--ssh-bastion' : 'ProxyJump';
    if (jump?.user !== undefined && !USER.test(jump.user)) throw usageError(`invalid ${from} user ${JSON.stringify(jump.user)}`);
    return {
      kind: 'ssh',
      host: host(config.hostName ?? flags['ssh-host'] ?? (await defaultHost()), '--ssh-host'),
      port: port(config.port),
      user,
      ...keys,
      knownHostsPath,
      bastion: jump && {
        host: host(jump.host, from),
        port: port(jump.port?.toString()),
        ...(jump.user ? { user: jump.user } : {}),
        // Its own entry's keys and known_hosts where it names them, else the node's.
        ...(jump.identityFiles.length > 0 ? { agent: undefined, ...keysOffered(jump, undefined, home, agent) } : {}),
        knownHostsPath: jump.knownHostsFile ?? knownHostsPath,
      },
    };
  })();
}

/**
 * The keys offered, as ssh offers them: --ssh-key, else every IdentityFile that exists, in order, else ssh's default
 * keys that exist; then ssh-agent's, unless IdentitiesOnly. With neither a key file nor an agent, the file ssh would
 * look for is named, so that the error says which one is missing.
 */
function keysOffered(entry: Pick<SshConfigEntry, 'identityFiles' | 'identitiesOnly'>, flagKey: string | undefined, home: string, agent: string | undefined) {
  const wanted = flagKey ? [flagKey] : entry.identityFiles.length > 0 ? entry.identityFiles : DEFAULT_KEYS.map((k) => `${home}/.ssh/${k}`);
  const found = flagKey ? wanted : wanted.filter((f) => existsSync(f));
  const privateKeyPaths = found.length > 0 || agent ? found : [entry.identityFiles[0] ?? `${home}/.ssh/id_ed25519`];
  const offerAgent = agent && !(entry.identitiesOnly && privateKeyPaths.length > 0) ? agent : undefined;
  return { ...(privateKeyPaths.length > 0 ? { privateKeyPaths } : {}), ...(offerAgent ? { agent: offerAgent } : {}) };
}
