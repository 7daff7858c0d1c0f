import { readFile } from 'node:fs/promises';
import { RunbookError } from '../../errors.js';
import { hostKeyPolicy } from './host-keys.js';
import { agentKeyTypes } from './agent-keys.js';
import { hostPattern } from './known-hosts.js';
import { ANSWER_GRACE_MS, CommandTimeoutError, ConnectionLostError, DEFAULT_COMMAND_TIMEOUT_MS, remoteShell, timedOutOnNode, type ExecOptions, type ExecResult, type Transport } from './types.js';

export interface SshOptions {
  host: string;
  port?: number;
  user: string;
  /** Key files, offered in order, or the key itself (privateKey), e.g. from a Pulumi secret; never logged. */
  privateKeyPaths?: string[];
  privateKey?: string;
  /** ssh-agent's socket (SSH_AUTH_SOCK): its keys are offered after the key files', as ssh offers them. */
  agent?: string;
  knownHostsPath: string;
  /** An optional jump host, reached first; what it leaves out (user, keys, agent, known_hosts) is the node's. */
  bastion?: { host: string; port?: number } & Partial<Pick<SshOptions, 'user' | 'privateKeyPaths' | 'agent' | 'knownHostsPath'>>;
  connectTimeoutMs?: number;
  keepaliveIntervalMs?: number;
}

type Ssh2 = typeof import('ssh2');
type Client = import('ssh2').Client;

interface Connection {
  client: Client;
  hops: Client[];
  /** Set when the server, the network or a keepalive timeout ended the session. */
  lost: boolean;
}

/**
 * SSH with ssh2: the host key must already be in known_hosts, keepalive on, a timeout on every command that ends it
 * on the node too. A lost connection fails the command it carried (which goes on on the node to its end or its own
 * timeout) and is opened again, host key checked again, for the next one.
 */
export class SshTransport implements Transport {
  readonly target: string;
  private constructor(private connection: Connection, private readonly options: SshOptions, private readonly reopen: () => Promise<Connection>) {
    this.target = `ssh ${options.user}@${options.host}:${options.port ?? 22}`;
  }

  /**
   * `deferIfUnreachable`: asked when the node does not answer at all; true gives a transport whose first command
   * connects (a node the run is waiting for to come back from its reboot). A host key or login refused never defers.
   */
  static async connect(options: SshOptions, deferIfUnreachable?: () => Promise<boolean>): Promise<SshTransport> {
    const ssh2: Ssh2 = (await import('ssh2')).default ?? (await import('ssh2'));
    const target = await credentials(ssh2, options);
    const jumpOptions = options.bastion && { ...options, ...options.bastion, port: options.bastion.port ?? 22, user: options.bastion.user ?? options.user };
    const jumpCredentials = jumpOptions && (await credentials(ssh2, jumpOptions));
    const open = async (): Promise<Connection> => {
      const hops: Client[] = [];
      try {
        let sock: NodeJS.ReadableStream | undefined;
        if (jumpOptions) {
          const jump = await openClient(ssh2, jumpOptions, jumpCredentials!);
          hops.push(jump);
          sock = await forwarded(jump, jumpOptions, options);
        }
        const client = await openClient(ssh2, options, target, sock);
        const connection: Connection = { client, hops, lost: false };
        const markLost = () => (connection.lost = true);
        client.on('close', markLost);
        client.on('error', markLost);
        return connection;
      } catch (e) {
        // A jump host left open would keep this process alive after the error.
        for (const hop of hops) hop.end();
        throw e;
      }
    };
    try {
      return new SshTransport(await open(), options, open);
    } catch (e) {
      if (!(e instanceof RunbookError && e.code === 'unreachable' && deferIfUnreachable && (await deferIfUnreachable()))) throw e;
      return new SshTransport({ client: new ssh2.Client(), hops: [], lost: true }, options, open);
    }
  }

  async exec(script: string, options: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    if (this.connection.lost) {
      this.end(this.connection);
      this.connection = await this.reopen();
    }
    const connection = this.connection;
    // Non-root users run through sudo -n: it never prompts, so a missing sudo rule fails at once.
    const shell = remoteShell(timeoutMs);
    const wrapped = this.options.user === 'root' ? shell : `sudo -n ${shell}`;
    const started = Date.now();
    return new Promise((resolve, reject) => {
      connection.client.exec(wrapped, (err, stream) => {
        if (err) {
          connection.lost = true;
          return reject(new ConnectionLostError(this.target, false, err));
        }
        const out: Buffer[] = [];
        const errOut: Buffer[] = [];
        let code: number | undefined;
        const timer = setTimeout(() => {
          // The node ends the command by its own timeout; here we only stop waiting, and start afresh next time.
          connection.lost = true;
          stream.close();
          reject(new CommandTimeoutError(this.target, timeoutMs, false));
        }, timeoutMs + ANSWER_GRACE_MS);
        stream.on('data', (d: Buffer) => out.push(d));
        stream.stderr.on('data', (d: Buffer) => errOut.push(d));
        stream.on('exit', (c: number | null) => (code = c ?? -1));
        stream.on('close', () => {
          clearTimeout(timer);
          if (code === undefined) {
            connection.lost = true;
            return reject(new ConnectionLostError(this.target, true));
          }
          if (timedOutOnNode(code, Date.now() - started, timeoutMs)) return reject(new CommandTimeoutError(this.target, timeoutMs, true));
          resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(errOut).toString('utf8') });
        });
        stream.end(script);
      });
    });
  }

  async close(): Promise<void> {
    this.end(this.connection);
  }

  private end(connection: Connection): void {
    connection.client.end();
    for (const hop of connection.hops) hop.end();
  }
}

/** A channel through the jump host to the node's sshd; a jump host that cannot reach it says so. */
function forwarded(jump: Client, via: SshOptions, to: SshOptions): Promise<NodeJS.ReadableStream> {
  const port = to.port ?? 22;
  return new Promise((resolve, reject) =>
    jump.forwardOut('127.0.0.1', 0, to.host, port, (err, stream) =>
      err ? reject(new RunbookError('unreachable', `the jump host ${hostPattern(via.host, via.port ?? 22)} cannot reach ${hostPattern(to.host, port)}: ${err.message}`, { cause: err })) : resolve(stream),
    ),
  );
}

/** The key given as such (the fleet's sshKey secret), as messages name it: "the SSH key given inline". */
const INLINE = 'given inline';

interface Credentials {
  /** Each key file (or the inline key) ssh2 can use as it is, by name; offered in this order, then the agent. */
  keys: Array<{ name: string; key: Buffer }>;
  knownHosts: string;
}

/** The keys and known_hosts of one hop, read before anything is dialled: a file that cannot be read is said by name. */
async function credentials(ssh2: Ssh2, options: SshOptions): Promise<Credentials> {
  const paths = options.privateKey === undefined ? (options.privateKeyPaths ?? []) : [];
  if (options.privateKey === undefined && paths.length === 0 && !options.agent) throw new RunbookError('usage', `no SSH key given for ${options.user}@${options.host}`);
  const [files, knownHosts] = await Promise.all([
    Promise.all(
      paths.map((path) =>
        readFile(path).then(
          (key) => ({ name: path, key }),
          (cause) => {
            throw new RunbookError('usage', `cannot read the SSH key ${path}`, { cause });
          },
        ),
      ),
    ),
    readFile(options.knownHostsPath, 'utf8').catch((cause) => {
      throw new RunbookError('usage', `cannot read known_hosts ${options.knownHostsPath}`, { cause });
    }),
  ]);
  const given = options.privateKey === undefined ? files : [{ name: INLINE, key: Buffer.from(options.privateKey) }];
  return { keys: given.filter(({ name, key }) => usableKey(ssh2, name, key, options)), knownHosts };
}

/**
 * Whether ssh2 can use a key as it is: one protected by a passphrase is refused by name (the tool never asks for one),
 * unless ssh-agent is there to hold it, as `ssh-add` does (false: left to the agent).
 */
function usableKey(ssh2: Ssh2, name: string, key: Buffer, options: SshOptions): boolean {
  const parsed = ssh2.utils.parseKey(key);
  if (!(parsed instanceof Error)) return true;
  if (/encrypted|passphrase/i.test(parsed.message)) {
    if (options.agent) return false;
    const path = name === INLINE ? 'KEY' : name;
    throw new RunbookError('usage', `the SSH key ${name} is protected by a passphrase, which this tool never asks for: add it to ssh-agent (\`ssh-add ${path}\`) and run with SSH_AUTH_SOCK set`);
  }
  throw new RunbookError('usage', `the SSH key ${name} is not a private key ssh2 can read: ${parsed.message}`);
}

/** Why a login was refused: each key offered by name, and what the agent held (an empty one said as such). */
async function refusal(options: SshOptions, credentials: Credentials): Promise<string> {
  const held = options.agent ? await agentKeyTypes(options.agent) : undefined;
  const files = credentials.keys.map((k) => (k.name === INLINE ? 'the key given inline' : k.name));
  const agent = options.agent && `ssh-agent (${options.agent})`;
  if (agent && held?.length === 0) {
    return files.length === 0 ? `no key to offer: ${agent} holds none, and no key file was named or found` : `the server refused ${files.join(', ')} (${agent} holds no key)`;
  }
  const agentKeys = agent && (held === undefined ? `the keys of ${agent}` : `the ${held.length} key(s) of ${agent}${certificates(held)}`);
  return `the server refused ${[...files, ...(agentKeys ? [agentKeys] : [])].join(', ')}`;
}

const certificates = (types: string[]) => {
  const n = types.filter((t) => t.includes('-cert-')).length;
  return n === 0 ? '' : `, of which ${n} are certificates, which this tool cannot offer`;
};

function openClient(ssh2: Ssh2, options: SshOptions, credentials: Credentials, sock?: NodeJS.ReadableStream): Promise<Client> {
  const port = options.port ?? 22;
  const where = `${options.user}@${hostPattern(options.host, port)}`;
  // Never accepted blindly: the server is offered only the key types listed for this host, and its key must be listed.
  // A host with no usable entry is still connected to, as ssh does, so an unreachable one says so first; whatever key
  // it then shows is refused by the verifier.
  const policy = hostKeyPolicy({ knownHosts: credentials.knownHosts, host: options.host, port, knownHostsPath: options.knownHostsPath });
  const username = options.user;
  const authHandler = [
    ...credentials.keys.map(({ key }) => ({ type: 'publickey' as const, username, key })),
    ...(options.agent ? [{ type: 'agent' as const, username, agent: options.agent }] : []),
  ];
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    let hostKeyProblem: RunbookError | undefined;
    let handshaken = false;
    // A refused login is worded once the agent said what it holds: the close that follows must not speak first.
    let refused = false;
    client.on('ready', () => resolve(client));
    client.on('handshake', () => (handshaken = true));
    // Closed with neither ready nor an error: after the key exchange, a login the server refused as it ended the
    // session (pam_nologin prints /run/nologin and closes while a node boots or shuts down); before it, unreachable.
    client.on('close', () =>
      refused ||
      reject(
        handshaken
          ? new RunbookError('authentication', `${where}: the server closed the connection at login (logins refused: /run/nologin while the node boots or shuts down?)`)
          : new RunbookError('unreachable', `${where}: the server closed the connection before the key exchange`),
      ),
    );
    client.on('error', (err: Error & { level?: string; code?: string }) => {
      if (hostKeyProblem) return reject(hostKeyProblem);
      if (err.level === 'handshake' && err.message.includes('no matching host key format')) {
        const listed = policy.algorithms.join(', ');
        return reject(new RunbookError('hostKey', `the host key of ${hostPattern(options.host, port)} does not match ${options.knownHostsPath}: the server offers none of the key types listed there (${listed}) (possible man-in-the-middle)`, { cause: err }));
      }
      if (err.level === 'client-authentication') {
        refused = true;
        return void refusal(options, credentials).then((why) => reject(new RunbookError('authentication', `${where}: ${why}`, { cause: err })));
      }
      reject(new RunbookError('unreachable', `${where}: cannot connect (${err.code ?? err.message})`, { cause: err }));
    });
    client.connect({
      host: options.host,
      port,
      username,
      authHandler,
      sock: sock as never,
      readyTimeout: options.connectTimeoutMs ?? 15_000,
      keepaliveInterval: options.keepaliveIntervalMs ?? 5_000,
      keepaliveCountMax: 3,
      ...(policy.algorithms.length > 0 ? { algorithms: { serverHostKey: policy.algorithms } } : {}),
      hostVerifier: (key: Buffer) => {
        hostKeyProblem = policy.check(key);
        return hostKeyProblem === undefined;
      },
    });
  });
}
