import { command } from '../transport/quote.js';
import type { CniCacheEntry } from '../state/types.js';
import { cacheConfig } from './cache.js';

// Replaying CNI DEL from libcni's cache, as libcni's own DelNetworkList does: for each plugin of the cached config in
// reverse, stdin is the plugin's config plus the list's name and cniVersion, the cached result as prevResult
// (cniVersion >= 0.4.0), and the cached capability args the plugin declares; CNI_ARGS come from the cache too.
export interface PluginCall {
  type: string;
  stdin: string;
}

export interface DelReplay {
  entryPath: string;
  containerId: string;
  ifName: string;
  networkName: string;
  ips: string[];
  /** Where the sandbox's network namespace is, or "" when it is gone (DEL then releases IPAM only). */
  netns: string;
  cniArgs: string;
  calls: PluginCall[];
  /** cache: the config came from the entry; rebuilt: the entry is result-only and the config was rebuilt. */
  source: 'cache' | 'rebuilt';
}

const PLUGIN_TYPE = /^[A-Za-z0-9_.-]+$/;

function versionAtLeast(version: string, min: [number, number, number]): boolean {
  const parts = version.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < 3; i++) {
    if ((parts[i] ?? 0) !== min[i]) return (parts[i] ?? 0) > min[i]!;
  }
  return true;
}

type Json = Record<string, unknown>;

/** The plugin calls of a DEL for a config (conf or conflist) and the entry's cached result and capability args. */
export function delCalls(configText: string, result: unknown, capabilityArgs: Record<string, unknown> = {}): PluginCall[] {
  const config = JSON.parse(configText) as Json & { plugins?: Json[] };
  const listVersion = String(config.cniVersion ?? '0.1.0');
  const plugins: Json[] = Array.isArray(config.plugins) ? config.plugins : [config];
  const calls = plugins.map((plugin) => {
    const type = String(plugin.type ?? '');
    if (!PLUGIN_TYPE.test(type)) throw new Error(`invalid plugin type ${JSON.stringify(type)} in the cached config`);
    const stdin: Json = { ...plugin, name: config.name, cniVersion: listVersion };
    if (result !== undefined && versionAtLeast(listVersion, [0, 4, 0])) stdin.prevResult = result;
    const declared = (plugin.capabilities ?? {}) as Record<string, boolean>;
    const runtimeConfig = Object.fromEntries(Object.entries(capabilityArgs).filter(([k]) => declared[k]));
    if (Object.keys(runtimeConfig).length > 0) stdin.runtimeConfig = runtimeConfig;
    return { type, stdin: JSON.stringify(stdin) };
  });
  return calls.reverse();
}

/** kubenet's bridge config for a PodCIDR (cri-dockerd's template), for result-only cache entries of kubenet. */
export function kubenetConfig(podCidr: string, network: 'kubenet' | 'kubenet-loopback'): string {
  if (network === 'kubenet-loopback') return JSON.stringify({ cniVersion: '0.1.0', name: 'kubenet-loopback', type: 'loopback' });
  return JSON.stringify({
    cniVersion: '0.1.0',
    name: 'kubenet',
    type: 'bridge',
    bridge: 'cbr0',
    mtu: 1460,
    addIf: 'eth0',
    isGateway: true,
    ipMasq: false,
    hairpinMode: false,
    ipam: { type: 'host-local', ranges: [[{ subnet: podCidr }]], routes: [{ dst: '0.0.0.0/0' }] },
  });
}

/**
 * Plans the DEL for one cache entry. Result-only entries get kubenet's config rebuilt from the PodCIDR, or the
 * node's current config of the same network name; with neither, the entry cannot be replayed.
 */
export function planReplay(
  entry: CniCacheEntry,
  netns: string,
  fallback: { podCidr?: string; configsByNetwork: Map<string, string> },
): DelReplay | { entryPath: string; reason: string } {
  let config = cacheConfig(entry);
  let source: DelReplay['source'] = 'cache';
  if (!config) {
    source = 'rebuilt';
    if ((entry.networkName === 'kubenet' || entry.networkName === 'kubenet-loopback') && (fallback.podCidr || entry.networkName === 'kubenet-loopback')) {
      config = kubenetConfig(fallback.podCidr ?? '', entry.networkName);
    } else {
      config = fallback.configsByNetwork.get(entry.networkName);
    }
  }
  if (!config) return { entryPath: entry.path, reason: `result-only cache entry of network ${entry.networkName || '?'} and no config to rebuild it from` };
  try {
    return {
      entryPath: entry.path,
      containerId: entry.containerId,
      ifName: entry.ifName,
      networkName: entry.networkName,
      ips: entry.ips,
      netns,
      cniArgs: (entry.cniArgs ?? []).map(([k, v]) => `${k}=${v}`).join(';'),
      calls: delCalls(config, entry.result, entry.capabilityArgs),
      source,
    };
  } catch (e) {
    return { entryPath: entry.path, reason: (e as Error).message };
  }
}

/**
 * One script for all DELs; prints "ok\t<entry>" or "fail\t<entry>\t<output>" per entry. The cache entry is removed
 * only after every plugin of its DEL succeeded, as libcni does.
 */
export function replayScript(replays: DelReplay[], binDir: string): string {
  const lines = ['set +e'];
  for (const r of replays) {
    lines.push(`ns=${command(r.netns)}; [ -n "$ns" ] && [ ! -e "$ns" ] && ns=""`, 'rc=0; out=""');
    for (const call of r.calls) {
      lines.push(
        `[ $rc = 0 ] && { out=$(printf '%s' ${command(call.stdin)} | CNI_COMMAND=DEL CNI_CONTAINERID=${command(r.containerId)} CNI_NETNS="$ns" CNI_IFNAME=${command(r.ifName)} CNI_ARGS=${command(r.cniArgs)} CNI_PATH=${command(binDir)} timeout 60 ${command(`${binDir}/${call.type}`)} 2>&1) || rc=$?; }`,
      );
    }
    // Like the runtime after its teardown: a pinned netns of the sandbox goes too, once no process is in it.
    const pin = /^\/(var\/)?run\/netns\/[A-Za-z0-9_.-]+$/.test(r.netns) ? r.netns.split('/').pop()! : '';
    const dropPin = pin ? `; [ -z "$(ip netns pids ${command(pin)} 2>/dev/null)" ] && ip netns delete ${command(pin)} 2>/dev/null` : '';
    lines.push(`if [ $rc = 0 ]; then rm -f ${command(r.entryPath)}${dropPin}; printf 'ok\\t%s\\n' ${command(r.entryPath)}; else printf 'fail\\t%s\\t%s\\n' ${command(r.entryPath)} "$(printf '%s' "$out" | tr '\\n\\t' '  ' | cut -c1-300)"; fi`);
  }
  return lines.join('\n');
}

export function parseReplayOutput(text: string): { ok: Set<string>; failed: Map<string, string> } {
  const ok = new Set<string>();
  const failed = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [status, path, message = ''] = line.split('\t');
    if (status === 'ok' && path) ok.add(path);
    if (status === 'fail' && path) failed.set(path, message);
  }
  return { ok, failed };
}
