import { readFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import pRetry from 'p-retry';
import { RunbookError } from '../errors.js';
import { stoppedError } from '../stop.js';
import { closedUnderUs, keepAlive } from './keep-alive.js';

type KubeConfig = import('./client-node.js').KubeConfig;

export interface ClusterOptions {
  kubeconfig?: string;
  context?: string;
  requestTimeoutMs?: number;
  /** How long a request keeps being retried while the API does not answer (network error, timeout, 5xx). */
  outageToleranceMs?: number;
  /** A line for every retry (throttled, or no answer), from the first request on: else they are waited out unsaid. */
  onRetry?: (message: string) => void;
}

/** An API error with the status code and the Status reason, e.g. 429 TooManyRequests from a PDB-refused eviction. */
export class ApiError extends Error {
  /**
   * A 429 that means "later" (API Priority and Fairness, max-in-flight): any 429 but an eviction's, which is a
   * PodDisruptionBudget's answer that the drain handles itself.
   */
  readonly throttled: boolean;
  /** The server's Retry-After, in ms, when it sent one. */
  readonly retryAfterMs?: number;
  constructor(readonly status: number, readonly reason: string, message: string, options: { path?: string; retryAfterMs?: number } = {}) {
    super(message);
    this.name = 'ApiError';
    this.throttled = status === 429 && !/\/eviction$/.test(options.path ?? '');
    this.retryAfterMs = options.retryAfterMs;
  }
}

export const isNotFound = (e: unknown) => e instanceof ApiError && e.status === 404;
/** A write over a version someone moved on, or a create of a name taken meanwhile (reason AlreadyExists). */
export const isConflict = (e: unknown) => e instanceof ApiError && e.status === 409;
export const isAlreadyExists = (e: unknown) => e instanceof ApiError && e.status === 409 && e.reason === 'AlreadyExists';
export const isForbidden = (e: unknown) => e instanceof ApiError && e.status === 403;

export const isThrottled = (e: unknown) => e instanceof ApiError && e.throttled;

/** The API did not answer, or answered that it cannot now (5xx, or throttled): worth asking again. An eviction's 429 is not. */
export const isTransient = (e: unknown) =>
  (e instanceof RunbookError && e.code === 'unreachable') || (e instanceof ApiError && ([500, 502, 503, 504].includes(e.status) || e.throttled));

/** Retry-After, in seconds or as an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export interface RequestOptionsEx {
  /** Off for callers that keep their own time, such as the Lease renewal. */
  retry?: boolean;
  timeoutMs?: number;
}

interface Hooks {
  /** Runs before every write, each retry included: the runbook's Lease fence. */
  beforeWrite?: () => Promise<void>;
  /** An operator's stop: retries through an outage give up at once. */
  signal?: AbortSignal;
  onRetry?: (message: string) => void;
  /** Overrides the connection's outage tolerance (the run's --outage-tolerance). */
  outageToleranceMs?: number;
}

/**
 * The one place that talks to the Kubernetes API: client-node's KubeConfig for contexts, credentials and TLS, and
 * plain JSON requests, so that evictions of either policy version, leases and CRDs all take the same path.
 * An outage shorter than the tolerance is waited out here, so that no step fails for a restart of the apiserver.
 */
export class Cluster {
  private constructor(
    private readonly kc: KubeConfig,
    private readonly timeoutMs: number,
    private readonly toleranceMs: number,
    private readonly hooks: Hooks = {},
    /** Requests sent and bytes of answers read, shared by every Cluster made from the same connect. */
    private readonly counter = { sent: 0, bytesRead: 0 },
  ) {}

  static async connect(options: ClusterOptions = {}): Promise<Cluster> {
    const { KubeConfig } = await import('./client-node.js');
    const kc = new KubeConfig();
    try {
      if (options.kubeconfig) kc.loadFromFile(options.kubeconfig);
      else kc.loadFromDefault();
    } catch (cause) {
      const why = cause instanceof Error ? cause.message : String(cause);
      throw new RunbookError('usage', `cannot load the kubeconfig ${options.kubeconfig ?? '(default)'}: ${why}`, { cause });
    }
    if (options.context) {
      if (!kc.getContexts().some((c) => c.name === options.context)) {
        throw new RunbookError('usage', `the kubeconfig has no context named ${options.context}`);
      }
      kc.setCurrentContext(options.context);
    }
    if (!kc.getCurrentCluster()) throw new RunbookError('usage', 'the kubeconfig has no current cluster');
    return new Cluster(kc, options.requestTimeoutMs ?? 30_000, options.outageToleranceMs ?? 120_000, { onRetry: options.onRetry });
  }

  /** The same cluster, with a fence before every write and a line for every retry. */
  withHooks(hooks: Hooks): Cluster {
    return new Cluster(this.kc, this.timeoutMs, hooks.outageToleranceMs ?? this.toleranceMs, { ...this.hooks, ...hooks }, this.counter);
  }

  /**
   * The same API server as a ServiceAccount: a bound token asked for it (TokenRequest, which these credentials must be
   * allowed: create serviceaccounts/token), valid for `seconds`. Its user is named NAMESPACE:NAME.
   */
  async asServiceAccount(namespace: string, name: string, seconds: number): Promise<Cluster> {
    const { KubeConfig } = await import('./client-node.js');
    const kc = new KubeConfig();
    kc.loadFromString(await this.serviceAccountKubeconfig(namespace, name, seconds));
    return new Cluster(kc, this.timeoutMs, this.toleranceMs, this.hooks);
  }

  /** A kubeconfig (JSON) for this API server as the ServiceAccount, its bound token valid for `seconds`, its CA inline. */
  async serviceAccountKubeconfig(namespace: string, name: string, seconds: number): Promise<string> {
    const { token } = await this.requestToken(namespace, name, { seconds });
    return this.kubeconfigAs(`${namespace}:${name}`, { token });
  }

  /**
   * A token of the ServiceAccount (TokenRequest, which these credentials must be allowed: create
   * serviceaccounts/token), valid for `seconds` or bound to a Node (it dies with that object, and carries its name),
   * and when it expires as the API server set it (which may cap what was asked).
   */
  async requestToken(namespace: string, name: string, { seconds, node }: { seconds: number; node?: string }): Promise<{ token: string; expiresAt: Date }> {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`;
    const account = `the ServiceAccount ${namespace}/${name}`;
    const spec = { expirationSeconds: seconds, ...(node ? { boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: node } } : {}) };
    const answer = await this.request<{ status?: { token?: string; expirationTimestamp?: string } }>('POST', path, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec }).catch((error: unknown) => {
      // Refused before the runbook starts: the node is untouched, and the operator is told which right to grant.
      if (isForbidden(error)) throw new RunbookError('preflight', `the kubeconfig's user ${this.user} may not ask a token for ${account} (create serviceaccounts/token in ${namespace}${node ? `, bound to the node ${node}` : ''}); nothing was changed (the API server said: ${(error as Error).message})`, { cause: error });
      if (isNotFound(error)) throw new RunbookError('preflight', `${account} does not exist (createRbac makes it with the stack's RBAC); nothing was changed`, { cause: error });
      throw error;
    });
    const expiresAt = new Date(answer.status?.expirationTimestamp ?? '');
    if (!answer.status?.token || Number.isNaN(expiresAt.getTime())) throw new RunbookError('usage', `the API server gave no token (or no expiry) for ${account}`);
    return { token: answer.status.token, expiresAt };
  }

  /** A kubeconfig (JSON) for this API server as `user`: with its token, or with a file of it read again as it changes. */
  kubeconfigAs(user: string, credential: { token: string } | { tokenFile: string }): string {
    const server = this.kc.getCurrentCluster()!;
    // A CA given as a file (in a pod: the ServiceAccount's ca.crt) goes inline: the kubeconfig is read elsewhere.
    const caData = server.caData ?? (server.caFile ? readFileSync(server.caFile).toString('base64') : undefined);
    // client-node's tokenFile provider reads the file again every minute: a token renewed there is taken up.
    const auth = 'token' in credential ? { token: credential.token } : { 'auth-provider': { name: 'tokenFile', config: { tokenFile: credential.tokenFile } } };
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: server.name, cluster: { server: server.server, 'certificate-authority-data': caData, 'tls-server-name': server.tlsServerName, 'insecure-skip-tls-verify': server.skipTLSVerify || undefined } }],
      users: [{ name: user, user: auth }],
      contexts: [{ name: user, context: { cluster: server.name, user } }],
      'current-context': user,
    });
  }

  /** How many requests (watches included) this connection has sent. */
  get requestsSent(): number {
    return this.counter.sent;
  }

  /** How many bytes of answers (bodies) this connection has read: what a command cost the apiserver to serve. */
  get bytesRead(): number {
    return this.counter.bytesRead;
  }

  get server(): string {
    return this.kc.getCurrentCluster()?.server ?? '';
  }

  /** The kubeconfig's user for this context, as named there. */
  get user(): string {
    return this.kc.getCurrentUser()?.name ?? '(no user)';
  }

  async request<T>(method: string, path: string, body?: unknown, contentType = 'application/json', options: RequestOptionsEx = {}): Promise<T> {
    // Every try of a write asks the fence again: a write retried through an outage never lands for a run that lost its Lease meanwhile.
    const once = async () => {
      if (method !== 'GET') await this.hooks.beforeWrite?.();
      return this.send<T>(method, path, body, contentType, options.timeoutMs ?? this.timeoutMs);
    };
    if (options.retry === false) return once();
    const started = Date.now();
    const left = () => this.toleranceMs - (Date.now() - started);
    const where = `${method} ${new URL(path, this.server).pathname}`;
    const said = (attempt: number) => attempt === 1 || attempt % 5 === 0;
    // A throttled request is asked again when the server says (APF sends Retry-After), with no backoff of our own.
    const unthrottled = () =>
      pRetry(once, {
        retries: Number.POSITIVE_INFINITY,
        minTimeout: 0,
        shouldRetry: ({ error }) => isThrottled(error) && left() > 0,
        onFailedAttempt: async ({ error, attemptNumber }) => {
          if (!isThrottled(error)) return;
          const wait = Math.min((error as ApiError).retryAfterMs ?? 1_000, Math.max(0, left()));
          if (said(attemptNumber)) this.hooks.onRetry?.(`the Kubernetes API is throttling ${where} (429 ${error.message.split(': 429 ')[1] ?? ''}); asking again after ${Math.round(wait / 1000)}s (Retry-After), for up to ${Math.round(left() / 1000)}s`);
          await new Promise((r) => setTimeout(r, wait));
        },
      });
    // The stop is looked at between tries, never handed to p-retry: it would reject a try whose write landed while
    // the stop came (the Lease written, said as "gave up"). A try under way is let finish; no new one starts.
    const stopped = () => this.hooks.signal?.aborted === true;
    return pRetry(unthrottled, {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: 1_000,
      maxTimeout: 5_000,
      maxRetryTime: this.toleranceMs,
      shouldRetry: ({ error }) => isTransient(error) && !stopped(),
      onFailedAttempt: ({ error, attemptNumber }) => {
        if (isTransient(error) && !isThrottled(error) && !stopped() && said(attemptNumber)) this.hooks.onRetry?.(`the Kubernetes API did not answer ${where} (${error.message}); retrying for up to ${Math.round(left() / 1000)}s`);
      },
    }).catch((error: unknown) => {
      if (stopped() && isTransient(error)) throw stoppedError(this.hooks.signal!, `it gave up on ${where}`);
      throw error;
    });
  }

  get<T>(path: string, options?: RequestOptionsEx): Promise<T> {
    return this.request<T>('GET', path, undefined, undefined, options);
  }

  mergePatch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PATCH', path, body, 'application/merge-patch+json');
  }

  /**
   * A watch (`path` with `watch=1`): `onEvent` for each event as it comes, until `stop()` or the server ends it
   * (`done` then resolves; it rejects when the connection fails). Not retried: the caller lists again and re-watches.
   */
  watch<T>(path: string, onEvent: (type: string, object: T) => void): { done: Promise<void>; stop: () => void } {
    let stop = () => undefined as void;
    const done = (async () => {
      const { url, options, send } = await this.prepare('GET', path, undefined, '', 0);
      await new Promise<void>((resolve, reject) => {
        const req = send(options, (res) => {
          if ((res.statusCode ?? 0) >= 300) {
            res.resume();
            return reject(new ApiError(res.statusCode ?? 0, '', `GET ${url.pathname} (watch): ${res.statusCode}`));
          }
          let buffer = '';
          res.on('data', (c: Buffer) => {
            this.counter.bytesRead += c.length;
            buffer += c.toString('utf8');
            const lines = buffer.split('\n');
            buffer = lines.pop()!;
            for (const line of lines.filter(Boolean)) {
              let event: { type: string; object: T };
              try {
                event = JSON.parse(line) as typeof event;
              } catch {
                req.destroy();
                return reject(new ApiError(res.statusCode ?? 0, 'MalformedAnswer', `GET ${url.pathname} (watch): an event that is not JSON: ${JSON.stringify(line.slice(0, 120))}`));
              }
              onEvent(event.type, event.object);
            }
          });
          res.on('end', () => resolve());
          res.on('error', () => resolve());
        });
        stop = () => {
          req.destroy();
          resolve();
        };
        req.on('error', (cause) => reject(new RunbookError('unreachable', `the Kubernetes API at ${this.server} broke off a watch`, { cause })));
        req.end();
      });
    })();
    return { done, stop: () => stop() };
  }

  private async prepare(method: string, path: string, body: unknown, contentType: string, timeoutMs: number) {
    const url = new URL(path, this.server);
    const options: RequestOptions = {
      method,
      hostname: url.hostname,
      port: url.port,
      path: `${url.pathname}${url.search}`,
      headers: { Accept: 'application/json', ...(body !== undefined ? { 'Content-Type': contentType } : {}) },
      ...(timeoutMs > 0 ? { timeout: timeoutMs } : {}),
    };
    await this.kc.applyToHTTPSOptions(options);
    keepAlive(options, url.protocol);
    this.counter.sent++;
    return { url, options, send: url.protocol === 'http:' ? httpRequest : httpsRequest };
  }

  private async send<T>(method: string, path: string, body: unknown, contentType: string, timeoutMs: number, firstTry = true): Promise<T> {
    const { url, options, send } = await this.prepare(method, path, body, contentType, timeoutMs);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    // Sized always: Node sends a DELETE's body neither chunked nor sized, and on a kept connection the apiserver
    // then reads that body as the next request.
    if (payload !== undefined) options.headers = { ...options.headers, 'Content-Length': Buffer.byteLength(payload) };
    return new Promise<T>((resolve, reject) => {
      const req = send(options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          this.counter.bytesRead += c.length;
          chunks.push(c);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            // A proxy's HTML page or a cut body is this call's error, never an exception in a handler nobody awaits.
            try {
              return resolve((text ? JSON.parse(text) : {}) as T);
            } catch {
              return reject(new ApiError(status, 'MalformedAnswer', `${method} ${url.pathname}: ${status} with an answer that is not JSON: ${JSON.stringify(text.slice(0, 120))}`, { path: url.pathname }));
            }
          }
          let reason = '';
          let message = text.slice(0, 300);
          try {
            const s = JSON.parse(text) as { reason?: string; message?: string };
            reason = s.reason ?? '';
            message = s.message ?? message;
          } catch {
            // not a Status object
          }
          const after = res.headers['retry-after'];
          reject(new ApiError(status, reason, `${method} ${url.pathname}: ${status} ${message}`, { path: url.pathname, retryAfterMs: retryAfterMs(Array.isArray(after) ? after[0] : after) }));
        });
        res.on('error', (cause) => reject(new RunbookError('unreachable', `the Kubernetes API at ${this.server} broke off its answer`, { cause })));
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer in ${timeoutMs} ms`)));
      req.on('error', (cause) => {
        if (firstTry && closedUnderUs(cause, req.reusedSocket)) return resolve(this.send<T>(method, path, body, contentType, timeoutMs, false));
        reject(new RunbookError('unreachable', `the Kubernetes API at ${this.server} did not answer`, { cause }));
      });
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }
}
