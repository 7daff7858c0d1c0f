import type { IncomingMessage, Server } from 'node:http';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../../src/cluster/api.js';
import { keepAlive } from '../../../src/cluster/keep-alive.js';
import { loopbackApi } from './loopback-api.js';

const bodyOf = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => resolve(text));
  });

// The API client keeps its connections: a handshake per request was most of a run's CPU.
describe('kept connections to the Kubernetes API', () => {
  let server: Server;
  let kubeconfig: string;
  let connections = 0;
  let dropNext = 0;
  const bodies: string[] = [];

  beforeAll(async () => {
    ({ server, kubeconfig } = await loopbackApi(async (req, res) => {
      const body = await bodyOf(req);
      if (dropNext > 0) {
        dropNext--;
        req.socket.destroy(); // the server closed the kept connection just as the request came
        return;
      }
      bodies.push(`${req.method} ${req.url} ${body}`);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'Status', status: 'Success' }));
    }));
    server.on('connection', () => connections++);
  });
  afterAll(() => server.close());

  it('sends many requests, from two connects of the same kubeconfig, over one connection', async () => {
    connections = 0;
    const [a, b] = [await Cluster.connect({ kubeconfig }), await Cluster.connect({ kubeconfig })];
    for (let i = 0; i < 5; i++) await (i % 2 ? a : b).get(`/api/v1/nodes/n${i}`);
    expect(connections).toBe(1);
  });

  it('sizes a DELETE body, so the next request on the connection is read as a request', async () => {
    bodies.length = 0;
    const cluster = await Cluster.connect({ kubeconfig });
    await cluster.request('DELETE', '/api/v1/namespaces/a/pods/p', { kind: 'DeleteOptions', gracePeriodSeconds: 0 }, 'application/json', { retry: false });
    await cluster.get('/api/v1/nodes/after', { retry: false });
    expect(bodies).toEqual(['DELETE /api/v1/namespaces/a/pods/p {"kind":"DeleteOptions","gracePeriodSeconds":0}', 'GET /api/v1/nodes/after ']);
  });

  it('sends a request again, once, when the server closed the kept connection under it', async () => {
    const cluster = await Cluster.connect({ kubeconfig });
    await cluster.get('/api/v1/nodes/warm', { retry: false });
    bodies.length = 0;
    dropNext = 1;
    await cluster.get('/api/v1/nodes/again', { retry: false });
    expect(bodies).toEqual(['GET /api/v1/nodes/again ']);
  });

  it('does not send it a third time: a server that keeps dropping is an unreachable API', async () => {
    const cluster = await Cluster.connect({ kubeconfig });
    await cluster.get('/api/v1/nodes/warm', { retry: false });
    dropNext = 2;
    await expect(cluster.get('/api/v1/nodes/dropped', { retry: false })).rejects.toMatchObject({ code: 'unreachable' });
    dropNext = 0;
  });
});

describe('one TLS agent per identity', () => {
  const tls = (cert: string): RequestOptions => ({ hostname: '127.0.0.1', port: 6443, ca: 'CA', cert, key: 'KEY', agent: new HttpsAgent() });
  it('shares the agent between requests with the same trust and client certificate, not across them', () => {
    const [a, b, c] = [tls('ONE'), tls('ONE'), tls('TWO')];
    for (const o of [a, b, c]) keepAlive(o, 'https:');
    expect(a.agent).toBe(b.agent);
    expect(a.agent).not.toBe(c.agent);
    expect((a.agent as HttpsAgent & { keepAlive: boolean }).keepAlive).toBe(true);
  });
  it('leaves a proxy agent as client-node made it', () => {
    class ProxyAgent extends HttpsAgent {}
    const proxied = { ...tls('ONE'), agent: new ProxyAgent() };
    keepAlive(proxied, 'https:');
    expect(proxied.agent).toBeInstanceOf(ProxyAgent);
  });
});
