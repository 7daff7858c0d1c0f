import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import { createHash } from 'node:crypto';

// client-node's KubeConfig builds a new https.Agent for every request, so every request paid a TCP and TLS
// handshake and a new secure context: most of a runbook run's own CPU time (measured with --cpu-prof).
const agents = new Map<string, HttpsAgent>();
const plain = new HttpAgent({ keepAlive: true });

/** What makes two TLS connections interchangeable: the same server trust and the same client certificate. */
function identity(options: RequestOptions): string {
  const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername, hostname, port } = options;
  const text = JSON.stringify([hostname, port, servername, rejectUnauthorized, passphrase, ...[ca, cert, key, pfx].map((v) => (v === undefined ? null : String(v)))]);
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Swaps the per-request agent that client-node set for a kept one shared by every request with the same TLS
 * identity. A proxy agent (a kubeconfig's proxy-url) is left as client-node made it.
 */
export function keepAlive(options: RequestOptions, protocol: string): void {
  if (protocol === 'http:') {
    options.agent = plain;
    return;
  }
  if (options.agent !== undefined && options.agent?.constructor !== HttpsAgent) return;
  const id = identity(options);
  let agent = agents.get(id);
  if (!agent) {
    const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options;
    agent = new HttpsAgent({ keepAlive: true, ca, cert, key, pfx, passphrase, servername, ...(rejectUnauthorized !== undefined ? { rejectUnauthorized } : {}) });
    agents.set(id, agent);
  }
  options.agent = agent;
}

/** A kept connection that the server closed as we reused it: the request never reached it, so it can be sent again. */
export const closedUnderUs = (error: unknown, reused: boolean) =>
  reused && ['ECONNRESET', 'EPIPE'].includes((error as NodeJS.ErrnoException | undefined)?.code ?? '');
