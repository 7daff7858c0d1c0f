import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { engineAddress, hearEngineCancel, refused } from '../../../src/fleet/provider-process.js';

// How the provider's process hears a cancelled or killed `pulumi up`: the engine's gRPC Cancel, through the very
// grpc-js and service definition the Node.js provider host serves (its own handler does nothing), and the engine's
// address no longer taking connections.
const fromPulumi = createRequire(createRequire(import.meta.url).resolve('@pulumi/pulumi'));

describe('the provider process hears the engine', () => {
  it('hears a Cancel sent to a provider host served by grpc-js, whose own handler was bound before', async () => {
    const grpc = fromPulumi('@grpc/grpc-js');
    const services = fromPulumi('./proto/provider_grpc_pb');
    const empty = fromPulumi('google-protobuf/google/protobuf/empty_pb');
    const server = new grpc.Server();
    // As the host does: its handler answers and does nothing else.
    server.addService(services.ResourceProviderService, { cancel: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, new empty.Empty()) });
    const port: number = await new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e: Error | null, p: number) => (e ? reject(e) : resolve(p))));
    let heard = 0;
    expect(hearEngineCancel(() => heard++)).toBe(true);
    const client = new services.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    await new Promise<void>((resolve, reject) => client.cancel(new empty.Empty(), (e: Error | null) => (e ? reject(e) : resolve())));
    expect(heard).toBe(1);
    client.close();
    server.forceShutdown();
  });

  it('reads the engine address among the host\'s arguments, and knows a refused connection from a slow one', async () => {
    expect(engineAddress('127.0.0.1:40123')).toEqual({ host: '127.0.0.1', port: 40123 });
    expect(engineAddress('--logtostderr')).toBeUndefined();
    const listening = createServer((s) => s.destroy());
    const port: number = await new Promise((r) => listening.listen(0, '127.0.0.1', () => r((listening.address() as { port: number }).port)));
    expect(await refused({ host: '127.0.0.1', port })).toBe(false);
    await new Promise((r) => listening.close(r));
    expect(await refused({ host: '127.0.0.1', port })).toBe(true);
  });
});
