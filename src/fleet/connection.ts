import { RunbookError } from '../errors.js';
import { openTransport, type Transport, type TransportSpec } from '../node/transport/index.js';
import type { NodeConnection } from './apply.js';

// How the fleet reaches a node (the program's reads, the provider's runs): SSH, or docker exec for kind's nodes.
function transportSpec(connection: NodeConnection, sshKey: string | undefined): TransportSpec {
  if (connection.kind === 'docker-exec') return connection;
  // The agent's nodes are never reached from here: their runs go through the API (through-agent.ts).
  if (connection.kind === 'agent') throw new RunbookError('usage', 'a node reached through its agent has no session from this machine');
  const [host = '', port] = (connection.bastion ?? '').split(':');
  return {
    kind: 'ssh',
    host: connection.host,
    port: connection.port,
    user: connection.user,
    knownHostsPath: connection.knownHosts,
    privateKey: sshKey,
    bastion: connection.bastion ? { host, port: port ? Number(port) : 22 } : undefined,
  };
}

/** A transport to the node for the length of `fn` (`deferIfUnreachable`: see openTransport). */
export async function withTransport<T>(connection: NodeConnection, sshKey: string | undefined, fn: (t: Transport) => Promise<T>, deferIfUnreachable?: () => Promise<boolean>): Promise<T> {
  const transport = await openTransport(transportSpec(connection, sshKey), deferIfUnreachable);
  try {
    return await fn(transport);
  } finally {
    await transport.close();
  }
}
