import { subnetOf } from '../../node/cni/host-local.js';
import type { NodeState } from '../../node/state/types.js';

type Ipam = { type?: string; range?: string; ipRanges?: Array<{ range?: string }> };
type PluginConf = { ipam?: Ipam };

/** A range as whereabouts names its pool: "10.0.0.0/16" for "10.0.0.7/16" and for "10.0.0.5-10.0.0.50/16". */
export function poolRange(range: string): string | undefined {
  const [ip = '', bits = ''] = (range.split('-').pop() ?? '').split('/');
  return /^\d+$/.test(bits) ? subnetOf(ip, Number(bits)) : undefined;
}

/** The pool ranges of the whereabouts networks configured on the node (`range`, or each of `ipRanges`). */
export function whereaboutsRanges(state: NodeState): string[] {
  const ranges = new Set<string>();
  for (const file of state.cniConfFiles) {
    let conf: PluginConf & { plugins?: PluginConf[] };
    try {
      conf = JSON.parse(file.content ?? '') as typeof conf;
    } catch {
      continue;
    }
    for (const plugin of conf.plugins ?? [conf]) {
      if (plugin.ipam?.type !== 'whereabouts') continue;
      for (const r of [plugin.ipam.range, ...(plugin.ipam.ipRanges ?? []).map((x) => x.range)]) {
        const pool = r ? poolRange(r) : undefined;
        if (pool) ranges.add(pool);
      }
    }
  }
  return [...ranges];
}
