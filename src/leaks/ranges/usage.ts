import { rangeBounds, type RangeBounds } from '../../node/cni/host-local.js';
import type { IpamDirectory } from '../../node/state/types.js';
import type { RangeUsage } from '../types.js';
import type { NetworkRanges } from './config.js';

// Per range usage of one host-local directory. Each reservation counts in the first range that holds it, so
// in use = allocated - leaked is never negative; what no range holds is reported apart, with why.
export function rangeUsage(dir: IpamDirectory, found: NetworkRanges, leakedPaths: Set<string>): RangeUsage[] {
  const count = (paths: string[]) => ({ allocated: paths.length, inUse: paths.filter((p) => !leakedPaths.has(p)).length, leaked: paths.filter((p) => leakedPaths.has(p)).length });
  if ('reason' in found) return [{ network: dir.network, cidr: null, reason: found.reason, ...count(dir.reservations.map((r) => r.path)) }];
  const measured: Array<{ bounds: RangeBounds; paths: string[] }> = [];
  const invalid: string[] = [];
  for (const range of found.ranges) {
    const bounds = rangeBounds(range);
    if ('error' in bounds) invalid.push(bounds.error);
    else measured.push({ bounds, paths: [] });
  }
  const outside: string[] = [];
  for (const r of dir.reservations) {
    const home = measured.find((m) => m.bounds.contains(r.ip));
    if (home) home.paths.push(r.path);
    else outside.push(r.path);
  }
  const usage: RangeUsage[] = measured.map(({ bounds, paths }) => ({
    network: dir.network,
    cidr: bounds.subnet,
    first: bounds.first,
    last: bounds.last,
    source: found.source,
    usable: bounds.usable,
    ...count(paths),
  }));
  if (outside.length > 0 || invalid.length > 0) {
    const reason = invalid.length > 0 ? `${found.source}: ${invalid.join('; ')}` : `outside every range of ${found.source} (left from an earlier config?)`;
    usage.push({ network: dir.network, cidr: null, reason, ...count(outside) });
  }
  return usage;
}
