import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, Cluster, retryAfterMs } from '../../../src/cluster/api.js';
import { loopbackApi } from './loopback-api.js';

// A loopback server that answers like a throttled apiserver: 429 with Retry-After, as API Priority and Fairness does.
describe('a throttled Kubernetes API (429 with Retry-After)', () => {
  let server: Server;
  let kubeconfig: string;
  const seen: Array<{ path: string; at: number }> = [];
  let throttleLeft = 0;

  beforeAll(async () => {
    ({ server, kubeconfig } = await loopbackApi((req, res) => {
      seen.push({ path: req.url ?? '', at: Date.now() });
      if (req.url?.endsWith('/eviction')) {
        res.writeHead(429, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'Status', reason: 'TooManyRequests', message: "Cannot evict pod as it would violate the pod's disruption budget.", code: 429 }));
      } else if (throttleLeft-- > 0) {
        res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '1' }).end(JSON.stringify({ kind: 'Status', reason: 'TooManyRequests', message: 'Too many requests, please try again later.', code: 429 }));
      } else {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'NodeList', items: [] }));
      }
    }));
  });
  afterAll(() => server.close());

  it('is asked again no sooner than Retry-After says, and the wait is said', async () => {
    seen.length = 0;
    throttleLeft = 2;
    const said: string[] = [];
    const cluster = (await Cluster.connect({ kubeconfig })).withHooks({ onRetry: (m) => said.push(m) });
    expect(await cluster.get('/api/v1/nodes')).toEqual({ kind: 'NodeList', items: [] });
    expect(seen).toHaveLength(3);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(1_000);
    expect(said[0]).toMatch(/^the Kubernetes API is throttling GET \/api\/v1\/nodes \(429 Too many requests, please try again later.\); asking again after 1s \(Retry-After\)/);
  });

  it('gives up at the outage tolerance with the 429', async () => {
    throttleLeft = 1_000;
    const cluster = await Cluster.connect({ kubeconfig, outageToleranceMs: 2_500 });
    await expect(cluster.get('/api/v1/nodes')).rejects.toMatchObject({ status: 429 });
    throttleLeft = 0;
  });

  it('an eviction\'s 429 (a disruption budget) is not retried here: the drain decides', async () => {
    seen.length = 0;
    const cluster = await Cluster.connect({ kubeconfig });
    const refused = cluster.request('POST', '/api/v1/namespaces/a/pods/b/eviction', {});
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    expect(seen).toHaveLength(1);
  });

  it('a stop that comes while a write is under way leaves its answer be: the write landed (issue 36 item 5)', async () => {
    const slow = await loopbackApi((_req, res) => setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"kind":"Lease"}'), 400));
    try {
      const stop = new AbortController();
      const cluster = (await Cluster.connect({ kubeconfig: slow.kubeconfig })).withHooks({ signal: stop.signal });
      setTimeout(() => stop.abort(new Error('SIGINT')), 100);
      await expect(cluster.request('PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x', {})).resolves.toEqual({ kind: 'Lease' });
    } finally {
      slow.server.close();
    }
  });

  it('a stop ends the retries through an outage, said as a stop', async () => {
    const down = await loopbackApi((req) => req.socket.destroy());
    try {
      const stop = new AbortController();
      const cluster = (await Cluster.connect({ kubeconfig: down.kubeconfig, outageToleranceMs: 60_000 })).withHooks({ signal: stop.signal });
      setTimeout(() => stop.abort(new Error('SIGINT')), 300);
      const t0 = Date.now();
      await expect(cluster.get('/api/v1/nodes')).rejects.toMatchObject({ code: 'stopped' });
      expect(Date.now() - t0).toBeLessThan(6_000);
    } finally {
      down.server.close();
    }
  });

  it('reads Retry-After in seconds or as a date', () => {
    expect(retryAfterMs('3')).toBe(3_000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});
