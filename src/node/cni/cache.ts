import type { CniCacheEntry } from '../state/types.js';

// libcni's result cache: <cacheDir>/results/<network>-<containerID>-<ifname>. cniCacheV1 entries (libcni >= 0.8)
// carry the config, CNI_ARGS and capability args of the ADD; older entries are the bare ADD result.
const CACHE_NAME = /^(.+)-([0-9a-f]{64}|[A-Za-z0-9_.]{8,})-([A-Za-z0-9_.]+)$/;

export function parseCacheEntry(path: string, name: string, content: string | undefined, mtime: number): CniCacheEntry {
  const fromName = CACHE_NAME.exec(name);
  const base: CniCacheEntry = {
    path,
    format: 'unreadable',
    networkName: fromName?.[1] ?? '',
    containerId: fromName?.[2] ?? '',
    ifName: fromName?.[3] ?? '',
    ips: [],
    mtime,
  };
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(content ?? '') as Record<string, unknown>;
  } catch {
    return base;
  }
  if (json.kind === 'cniCacheV1') {
    return {
      ...base,
      format: 'cniCacheV1',
      networkName: typeof json.networkName === 'string' ? json.networkName : base.networkName,
      containerId: typeof json.containerId === 'string' ? json.containerId : base.containerId,
      ifName: typeof json.ifName === 'string' ? json.ifName : base.ifName,
      netns: typeof json.netns === 'string' ? json.netns : undefined,
      config: typeof json.config === 'string' ? Buffer.from(json.config, 'base64').toString('utf8') : undefined,
      cniArgs: Array.isArray(json.cniArgs) ? (json.cniArgs as Array<[string, string]>) : undefined,
      capabilityArgs: (json.capabilityArgs as Record<string, unknown>) ?? undefined,
      result: json.result,
      ips: resultIps(json.result),
    };
  }
  return { ...base, format: 'legacy', result: json, ips: resultIps(json) };
}

/** IPs of a CNI result of any version: ips[].address (0.3+), ip4.ip / ip6.ip (0.1, 0.2). */
export function resultIps(result: unknown): string[] {
  if (!result || typeof result !== 'object') return [];
  const r = result as { ips?: Array<{ address?: string }>; ip4?: { ip?: string }; ip6?: { ip?: string } };
  const addresses = [
    ...(Array.isArray(r.ips) ? r.ips.map((i) => i.address) : []),
    r.ip4?.ip,
    r.ip6?.ip,
  ];
  return addresses.filter((a): a is string => typeof a === 'string').map((a) => a.split('/')[0]!);
}
