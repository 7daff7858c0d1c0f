import { cidrContains, parseIp } from './host-local.js';

// The node's IPv4 main routing table, as `ip -4 -o route show table main` prints it: what decides where a pod on the
// node sends a packet. Calico's bird routes each block affine to the node to a blackhole (`blackhole <block> proto
// bird`) and BGP brings a /32 for an address of the block that another node borrowed; without that /32, the node's
// pods cannot reach the borrower.
export interface Route {
  /** The destination as a CIDR ("0.0.0.0/0" for default, "/32" added to a lone address). */
  dest: string;
  /** unicast, or the route type ip prints first: blackhole, unreachable, prohibit, throw, local... */
  type: string;
  /** The line as ip printed it, for the operator. */
  text: string;
}

const TYPED = new Set(['blackhole', 'unreachable', 'prohibit', 'throw', 'local', 'broadcast', 'multicast', 'nat', 'anycast']);

export function parseRoute(line: string): Route | undefined {
  const words = line.trim().split(/\s+/);
  const typed = TYPED.has(words[0] ?? '');
  const dest = words[typed ? 1 : 0];
  if (!dest) return undefined;
  const cidr = dest === 'default' ? '0.0.0.0/0' : dest.includes('/') ? dest : `${dest}/32`;
  if (!parseIp(cidr.split('/')[0]!)) return undefined;
  return { dest: cidr, type: typed ? words[0]! : 'unicast', text: line.trim() };
}

/** The route the kernel picks for an address by longest prefix (policy rules aside), or undefined when none matches. */
export function routeFor(routes: Route[], ip: string): Route | undefined {
  let best: Route | undefined;
  let bestBits = -1;
  for (const r of routes) {
    const bits = Number(r.dest.split('/')[1]);
    if (bits > bestBits && cidrContains(r.dest)(ip)) {
      best = r;
      bestBits = bits;
    }
  }
  return best;
}
