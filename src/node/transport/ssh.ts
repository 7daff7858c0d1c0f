import { readFile } from 'node:fs/promises';
import { RunbookError } from '../../errors.js';
import { hostKeyPolicy } from './host-keys.js';
import { hostPattern } from './known-hosts.js';
import { ANSWER_GRACE_MS, CommandTimeoutError, ConnectionLostError, DEFAULT_COMMAND_TIMEOUT_MS, remoteShell, timedOutOnNode, type ExecOptions, type ExecResult, type Transport } from './types.js';

export interface SshOptions {
  host: string;
  port?: number;
  user: string;
  /** A key file, or the key itself (privateKey), e.g. from a Pulumi secret; never logged. */
  privateKeyPath?: string;
  privateKey?: string;
  /** ssh-agent's socket (SSH_AUTH_SOCK): its keys are offered after the key file's, as ssh offers them. */
  agent?: string;
  knownHostsPath: string;
  /** An optional jump host, reached first with the same key and known_hosts. */
  bastion?: { host: string; port?: number; user?: string };
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
    if (options.privateKey === undefined && options.privateKeyPath === undefined && !options.agent) throw new RunbookError('usage', `no SSH key given for ${options.user}@${options.host}`);
    const [privateKey, knownHosts] = await Promise.all([
      options.privateKey !== undefined
        ? Promise.resolve(Buffer.from(options.privateKey))
        : options.privateKeyPath === undefined
          ? Promise.resolve(undefined)
          : readFile(options.privateKeyPath).catch((cause) => {
              throw new RunbookError('usage', `cannot read the SSH key ${options.privateKeyPath}`, { cause });
            }),
      readFile(options.knownHostsPath, 'utf8').catch((cause) => {
        throw new RunbookError('usage', `cannot read known_hosts ${options.knownHostsPath}`, { cause });
      }),
    ]);
    usableKey(ssh2, privateKey, options);
    const open = async (): Promise<Connection> => {
      const hops: Client[] = [];
      let sock: NodeJS.ReadableStream | undefined;
      if (options.bastion) {
        const bastion = { host: options.bastion.host, port: options.bastion.port ?? 22 };
        const jump = await openClient(ssh2, { ...options, ...bastion, user: options.bastion.user ?? options.user }, privateKey, knownHosts);
        hops.push(jump);
        sock = await new Promise((resolve, reject) =>
          jump.forwardOut('127.0.0.1', 0, options.host, options.port ?? 22, (err, stream) => (err ? reject(err) : resolve(stream))),
        );
      }
      const client = await openClient(ssh2, options, privateKey, knownHosts, sock);
      const connection: Connection = { client, hops, lost: false };
      const markLost = () => (connection.lost = true);
      client.on('close', markLost);
      client.on('error', markLost);
      return connection;
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

/**
 * A key ssh2 can use as it is: one protected by a passphrase is refused by name (the tool never asks for one), unless
 * ssh-agent is there to hold it, as `ssh-add` does.
 */
function usableKey(ssh2: Ssh2, key: Buffer | undefined, options: SshOptions): void {
  if (key === undefined) return;
  const parsed = ssh2.utils.parseKey(key);
  if (!(parsed instanceof Error)) return;
  const which = options.privateKeyPath ?? '(given inline)';
  if (/encrypted|passphrase/i.test(parsed.message)) {
    if (options.agent) return;
    throw new RunbookError('usage', `the SSH key ${which} is protected by a passphrase, which this tool never asks for: add it to ssh-agent (\`ssh-add ${options.privateKeyPath ?? 'KEY'}\`) and run with SSH_AUTH_SOCK set`);
  }
  throw new RunbookError('usage', `the SSH key ${which} is not a private key ssh2 can read: ${parsed.message}`);
}

function openClient(
  ssh2: Ssh2,
  options: SshOptions,
  privateKey: Buffer | undefined,
  knownHosts: string,
  sock?: NodeJS.ReadableStream,
): Promise<Client> {
  const port = options.port ?? 22;
  const where = `${options.user}@${hostPattern(options.host, port)}`;
  // Never accepted blindly: the server is offered only the key types listed for this host, and its key must be listed.
  // A host with no usable entry is still connected to, as ssh does, so an unreachable one says so first; whatever key
  // it then shows is refused by the verifier.
  const policy = hostKeyPolicy({ knownHosts, host: options.host, port, knownHostsPath: options.knownHostsPath });
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    let hostKeyProblem: RunbookError | undefined;
    let handshaken = false;
    client.on('ready', () => resolve(client));
    client.on('handshake', () => (handshaken = true));
    // Closed with neither ready nor an error: after the key exchange, a login the server refused as it ended the
    // session (pam_nologin prints /run/nologin and closes while a node boots or shuts down); before it, unreachable.
    client.on('close', () =>
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
        const offered = [privateKey && (options.privateKeyPath ?? 'the key given inline'), options.agent && `the keys of ssh-agent (${options.agent})`].filter(Boolean).join(' and ');
        return reject(new RunbookError('authentication', `${where}: the server refused ${offered}`, { cause: err }));
      }
      reject(new RunbookError('unreachable', `${where}: cannot connect (${err.code ?? err.message})`, { cause: err }));
    });
    client.connect({
      host: options.host,
      port,
      username: options.user,
      // A passphrase-protected file is left to the agent that holds it (usableKey).
      ...(privateKey && !(ssh2.utils.parseKey(privateKey) instanceof Error) ? { privateKey } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
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
