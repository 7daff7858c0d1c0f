import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../../src/cluster/api.js';
import { loopbackApi } from './loopback-api.js';

// A 2xx answer that is not JSON (a proxy's login page, a body cut short): an error of the call that asked, never an
// exception thrown where nobody awaits it (that crashed the CLI, and left the provider's run renewing its Lease for ever).
describe('a malformed answer of the API', () => {
  let server: Server;
  let kubeconfig: string;
  beforeAll(async () => {
    ({ server, kubeconfig } = await loopbackApi((req, res) => {
      if (req.url?.includes('watch=1')) res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"type":"ADDED","object":{}}\n<html>\n');
      else res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>sign in</html>');
    }));
  });
  afterAll(() => server.close());

  it('rejects the request that got it, naming what came back', async () => {
    const cluster = await Cluster.connect({ kubeconfig });
    await expect(cluster.get('/api/v1/nodes/n1')).rejects.toThrow('GET /api/v1/nodes/n1: 200 with an answer that is not JSON: "<html>sign in</html>"');
  });

  it('ends a watch with an error at the first event that is not JSON, after the ones that were', async () => {
    const cluster = await Cluster.connect({ kubeconfig });
    const seen: string[] = [];
    const w = cluster.watch('/api/v1/pods?watch=1', (type) => seen.push(type));
    await expect(w.done).rejects.toThrow('an event that is not JSON: "<html>"');
    expect(seen).toEqual(['ADDED']);
  });
});
