import { isIP } from 'node:net';
import { hostLocalRanges, type HostLocalRange } from '../../node/cni/host-local.js';
import type { NodeState } from '../../node/state/types.js';

// Where a network's host-local ranges are written: its config in /etc/cni/net.d, found by name as libcni finds it
// (conflists first, then .conf and .json, each by file name); kubenet's config is generated, so its PodCIDR(s).
export type NetworkRanges = { source: string; ranges: HostLocalRange[] } | { reason: string };

type Ipam = Parameters<typeof hostLocalRanges>[0] & { type?: string };
interface CniConfig {
  name?: string;
  type?: string;
  ipam?: Ipam;
  plugins?: Array<{ type?: string; ipam?: Ipam }>;
}

const CONF_ORDER = ['.conflist', '.conf', '.json'];
const extensionRank = (name: string) => CONF_ORDER.findIndex((ext) => name.endsWith(ext));

function readConfigs(state: NodeState): { configs: Array<{ path: string; json: CniConfig }>; unreadable: string[] } {
  const files = state.cniConfFiles
    .filter((f) => extensionRank(f.name) >= 0)
    .sort((a, b) => extensionRank(a.name) - extensionRank(b.name) || a.name.localeCompare(b.name));
  const configs: Array<{ path: string; json: CniConfig }> = [];
  const unreadable: string[] = [];
  for (const f of files) {
    try {
      if (f.content === undefined) throw new Error('not read');
      configs.push({ path: f.path, json: JSON.parse(f.content) as CniConfig });
    } catch {
      unreadable.push(f.path);
    }
  }
  return { configs, unreadable };
}

export function networkRanges(state: NodeState, network: string, podCidrs: string[]): NetworkRanges {
  const { configs, unreadable } = readConfigs(state);
  const found = configs.find((c) => c.json.name === network);
  if (!found) {
    if (network === 'kubenet') {
      return podCidrs.length > 0 ? { source: 'PodCIDR', ranges: podCidrs.map((subnet) => ({ subnet })) } : { reason: "kubenet's range is the node's PodCIDR, and the node has none" };
    }
    const blind = unreadable.length > 0 ? ` (${unreadable.join(', ')} could not be read)` : '';
    return { reason: `no CNI config in /etc/cni/net.d names network ${JSON.stringify(network)}${blind}: renamed or removed?` };
  }
  const plugins = found.json.plugins ?? [found.json];
  const ipam = plugins.find((p) => p.ipam?.type === 'host-local')?.ipam;
  if (!ipam) return { reason: `${found.path} gives network ${network} no host-local IPAM (${plugins.map((p) => p.ipam?.type ?? p.type).join(', ')})` };
  const ranges: HostLocalRange[] = [];
  for (const range of hostLocalRanges(ipam)) {
    // Calico's CNI plugin fills host-local's subnet from the node's PodCIDR when told to.
    if (range.subnet !== 'usePodCidr' && range.subnet !== 'usePodCidrIPv6') {
      ranges.push(range);
      continue;
    }
    const family = range.subnet === 'usePodCidr' ? 4 : 6;
    const subnet = podCidrs.find((c) => isIP(c.split('/')[0] ?? '') === family);
    if (!subnet) return { reason: `${found.path} takes network ${network}'s range from the node's IPv${family} PodCIDR, and the node has none` };
    ranges.push({ ...range, subnet });
  }
  return ranges.length > 0 ? { source: found.path, ranges } : { reason: `${found.path}: host-local has neither ranges nor subnet for network ${network}` };
}
