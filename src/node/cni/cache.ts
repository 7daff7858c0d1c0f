import type { CniCacheEntry } from '../state/types.js';

// libcni's result cache: <cacheDir>/results/<network>-<containerID>-<ifname>. cniCacheV1 entries (libcni >= 0.8)
// carry the config, CNI_ARGS and capability args of the ADD; older entries are the bare ADD result.
const CACHE_NAME = /^(.+)-([0-9a-f]{64}|[A-Za-z0-9_.]{8,})-([A-Za-z0-9_.]+)$/;

export function parseCacheEntry(path: string, name: string, content: string | undefined, mtime: number): CniCacheEntry {
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(content ?? '') as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  if (json?.kind === 'cniCacheV1' && str(json.containerId) && str(json.ifName)) {
    return {
      path,
      format: 'cniCacheV1',
      networkName: str(json.networkName) ?? '',
      containerId: json.containerId as string,
      ifName: json.ifName as string,
      netns: str(json.netns),
      // Kept encoded: only a DEL replay needs it (cacheConfig decodes it).
      configBase64: str(json.config),
      cniArgs: Array.isArray(json.cniArgs) ? (json.cniArgs as Array<[string, string]>) : undefined,
      capabilityArgs: (json.capabilityArgs as Record<string, unknown>) ?? undefined,
      result: json.result,
      ips: resultIps(json.result),
      mtime,
    };
  }
  const fromName = CACHE_NAME.exec(name);
  return {
    path,
    format: json ? 'legacy' : 'unreadable',
    networkName: fromName?.[1] ?? '',
    containerId: fromName?.[2] ?? '',
    ifName: fromName?.[3] ?? '',
    result: json,
    ips: resultIps(json),
    mtime,
  };
}

/** The network config the ADD ran with, from a cniCacheV1 entry. */
export function cacheConfig(entry: CniCacheEntry): string | undefined {
  return entry.configBase64 === undefined ? undefined : Buffer.from(entry.configBase64, 'base64').toString('utf8');
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
