import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A plain-HTTP server on loopback that stands in for an apiserver, and a kubeconfig that points at it. */
export async function loopbackApi(handler: RequestListener): Promise<{ server: Server; kubeconfig: string }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const kubeconfig = join(mkdtempSync('/tmp/node-maint-loopback-api-'), 'kubeconfig');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  writeFileSync(kubeconfig, `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${url}", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`);
  return { server, kubeconfig };
}
