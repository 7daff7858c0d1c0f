import { Cluster } from '../cluster/api.js';
import { getNode } from '../cluster/nodes.js';
import { openTransport, type Transport } from '../node/transport/index.js';
import { RunbookError } from '../errors.js';
import { transportSpec, type ConnectFlags } from './connect.js';

/**
 * The cluster, the node (which must exist) and a transport to it, from the shared command-line flags; `onRetry` says
 * each request the API throttled or did not answer, and when it is asked again.
 */
export async function connectNode(
  node: string,
  flags: ConnectFlags & { kubeconfig?: string; context?: string },
  onRetry: (line: string) => void,
  deferIfUnreachable?: (cluster: Cluster) => Promise<boolean>,
): Promise<{ cluster: Cluster; transport: Transport }> {
  const cluster = await Cluster.connect({ kubeconfig: flags.kubeconfig, context: flags.context, onRetry });
  const object = await getNode(cluster, node);
  const internalIp = async () => {
    const ip = object.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    if (!ip) throw new RunbookError('usage', `node ${node} has no InternalIP; give --ssh-host`);
    return ip;
  };
  return { cluster, transport: await openTransport(await transportSpec(flags, internalIp, { node }), deferIfUnreachable && (() => deferIfUnreachable(cluster))) };
}
