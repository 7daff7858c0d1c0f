import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bed } from './bed.js';

// The apiserver as one run sees it, through an HTTPS proxy of the test's own that reads every request: it answers 404
// for the paths it hides (an API group the cluster does not serve, say) and passes the rest on as the bed's admin.
// TLS ends here, with a certificate made for the test; every other run and kubelet keeps talking to the apiserver.
export interface ApiFilter {
  /** A kubeconfig whose server is the proxy (its CA the test's own). */
  kubeconfig: string;
  /** The paths asked for so far (method and path). */
  asked: string[];
  /** Resolves when the first request `hold` matches has arrived; it is held (not passed on) until release(). */
  held: Promise<void>;
  /** Passes the held request on, as it came: a write delayed in the network, landing late. */
  release(): void;
  close(): Promise<void>;
}

/** Which request to hold: its method, path and body. */
export type HoldMatch = (method: string, path: string, body: string) => boolean;

const field = (config: string, name: string) => Buffer.from(new RegExp(`${name}: (\\S+)`).exec(config)![1]!, 'base64');

export async function apiFilter(hidden: string[], hold: HoldMatch = () => false): Promise<ApiFilter> {
  const admin = readFileSync(bed().kubeconfig, 'utf8');
  const upstream = new URL(/server: (\S+)/.exec(admin)![1]!);
  const dir = mkdtempSync(join(tmpdir(), 'node-maint-api-filter-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=node-maint-test-api-filter',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'cert.pem'));
  const asked: string[] = [];
  let holding = false;
  let arrived = () => undefined as void;
  let release = () => undefined as void;
  const held = new Promise<void>((r) => (arrived = r));
  const released = new Promise<void>((r) => (release = r));
  const server = createServer({ cert, key: readFileSync(join(dir, 'key.pem')) }, async (req, res) => {
    const path = req.url ?? '/';
    asked.push(`${req.method} ${path}`);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (!holding && hold(req.method ?? '', path, body.toString('utf8'))) {
      holding = true;
      arrived();
      await released;
    }
    if (hidden.some((h) => path === h || path.startsWith(`${h}/`) || path.startsWith(`${h}?`))) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', code: 404 }));
      return;
    }
    // The test's own token stays here: upstream, the proxy is the bed's admin by its client certificate.
    const { authorization: _token, ...headers } = { ...req.headers, host: upstream.host };
    const out = request({ host: upstream.hostname, port: upstream.port, path, method: req.method, headers,
      ca: field(admin, 'certificate-authority-data'), cert: field(admin, 'client-certificate-data'), key: field(admin, 'client-key-data') }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    out.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, [
    'apiVersion: v1', 'kind: Config', 'current-context: filtered',
    'clusters:', `- name: filtered`, `  cluster: {server: "https://127.0.0.1:${(server.address() as AddressInfo).port}", certificate-authority-data: ${cert.toString('base64')}}`,
    'users:', '- name: filtered', '  user: {token: unused}',
    'contexts:', '- name: filtered', '  context: {cluster: filtered, user: filtered}', '',
  ].join('\n'), { mode: 0o600 });
  return {
    kubeconfig,
    asked,
    held,
    release,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}
