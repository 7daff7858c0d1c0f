import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bed } from './bed.js';

// The apiserver as one run sees it, through a TCP proxy of the test's own (TLS passes through: the serving cert names
// 127.0.0.1): the test can make the API hang for that run, as a dead load balancer in front of it does, or refuse
// it, while every other file's runs and every kubelet keep talking to the apiserver itself.
export interface ApiProxy {
  /** A copy of the bed's admin kubeconfig whose server is the proxy. */
  kubeconfig: string;
  /** Nothing passes either way for `ms`; connections made meanwhile wait. Then everything goes on. */
  freeze(ms: number): Promise<void>;
  /** Connections refused and open ones cut for `ms`; then the proxy listens again. */
  stop(ms: number): Promise<void>;
  close(): Promise<void>;
}

const upstream = () => new URL(/server: (\S+)/.exec(readFileSync(bed().kubeconfig, 'utf8'))![1]!);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function apiProxy(): Promise<ApiProxy> {
  const target = upstream();
  const open = new Set<Socket>();
  let frozen: Promise<void> | undefined;
  const pipe = (client: Socket) => {
    const server = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const s of [client, server]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(server).on('error', () => undefined);
    server.pipe(client).on('error', () => undefined);
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  };
  const listen = (port: number) =>
    new Promise<Server>((resolve) => {
      const s = createServer((client) => (frozen ? void frozen.then(() => pipe(client)) : pipe(client)));
      s.listen(port, '127.0.0.1', () => resolve(s));
    });
  let server = await listen(0);
  /** The listener closed and every connection cut (close calls back once they are all gone). */
  const shut = async () => {
    const closed = new Promise<void>((r) => server.close(() => r()));
    open.forEach((s) => s.destroy());
    await closed;
  };
  const port = (server.address() as { port: number }).port;
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'node-maint-api-proxy-')), 'kubeconfig');
  writeFileSync(kubeconfig, readFileSync(bed().kubeconfig, 'utf8').replace(/server: \S+/, `server: https://127.0.0.1:${port}`), { mode: 0o600 });
  return {
    kubeconfig,
    async freeze(ms) {
      const paused = [...open];
      paused.forEach((s) => s.pause());
      frozen = sleep(ms);
      await frozen;
      frozen = undefined;
      paused.forEach((s) => s.resume());
    },
    async stop(ms) {
      await shut();
      await sleep(ms);
      server = await listen(port);
    },
    close: shut,
  };
}
