import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { IpReservation } from '../state/types.js';

// host-local's on-disk format: one file per reserved IP named after it, holding "<containerID>\r\n<ifname>" since
// plugins v0.8.0 and the container ID alone before; "lock" and "last_reserved_ip.<range>" are bookkeeping.
export function isReservationFileName(name: string): boolean {
  return isIP(name.replace(/_/g, ':')) !== 0;
}

export function parseReservation(network: string, path: string, name: string, content: string, mtime: number): IpReservation | null {
  if (!isReservationFileName(name)) return null;
  const [first = '', second] = content.split('\n').map((line) => line.trim());
  return { network, ip: name.replace(/_/g, ':'), path, containerId: first, ifName: second ? second : null, mtime };
}

/** The content host-local writes for a reservation, for tests and for restoring backups. */
export function reservationContent(containerId: string, ifName: string | null): string {
  return ifName === null ? containerId : `${containerId}\r\n${ifName}`;
}

// Address math, IPv4 and IPv6 alike, by ipaddr.js. node:net's isIP screens first: ipaddr.js also reads "10.1" as an
// address, which no file name or pod IP ever means.
type Address = ipaddr.IPv4 | ipaddr.IPv6;

export function parseIp(text: string): Address | undefined {
  return isIP(text) === 0 ? undefined : ipaddr.process(text);
}

/** The form Go prints (what host-local names its files and the API reports), so two spellings of one address meet. */
export function canonicalIp(text: string): string {
  return parseIp(text)?.toString() ?? text;
}

function parseCidr(cidr: string): [Address, number] | undefined {
  const [base = '', bits = ''] = cidr.split('/');
  if (isIP(base) === 0 || !/^\d+$/.test(bits) || !ipaddr.isValidCIDR(cidr)) return undefined;
  return ipaddr.parseCIDR(cidr);
}

/** A predicate for "this address is in this CIDR", the CIDR parsed once; false for the other IP family. */
export function cidrContains(cidr: string): (ip: string) => boolean {
  const range = parseCidr(cidr);
  if (!range) return () => false;
  return (ip) => {
    const address = parseIp(ip);
    return address !== undefined && address.kind() === range[0].kind() && address.match(range);
  };
}

export function ipInCidr(ip: string, cidr: string): boolean {
  return cidrContains(cidr)(ip);
}

// Offsets within a subnet: the address's bytes read as one number (the library gives bytes, not arithmetic).
const toNumber = (address: Address) => address.toByteArray().reduce((n, byte) => (n << 8n) | BigInt(byte), 0n);
const fromNumber = (n: bigint, bytes: number) =>
  ipaddr.fromByteArray(Array.from({ length: bytes }, (_, i) => Number((n >> BigInt(8 * (bytes - 1 - i))) & 0xffn)));

/** The subnet's network address and bounds as numbers; undefined when the text is no CIDR. */
function subnetBounds(cidr: string): { network: bigint; broadcast: bigint; bytes: number; kind: string } | undefined {
  const range = parseCidr(cidr);
  if (!range) return undefined;
  const family = range[0].kind() === 'ipv4' ? ipaddr.IPv4 : ipaddr.IPv6;
  return { network: toNumber(family.networkAddressFromCIDR(cidr)), broadcast: toNumber(family.broadcastAddressFromCIDR(cidr)), bytes: range[0].toByteArray().length, kind: range[0].kind() };
}

/** The address `ordinal` places after the subnet's network address (a Calico block's ordinal). */
export function addressAt(cidr: string, ordinal: number): string | undefined {
  const subnet = subnetBounds(cidr);
  if (!subnet || !Number.isInteger(ordinal) || ordinal < 0) return undefined;
  const n = subnet.network + BigInt(ordinal);
  return n > subnet.broadcast ? undefined : fromNumber(n, subnet.bytes).toString();
}

/** The address `offset` places after `base` (a whereabouts pool's offset from its range's first address). */
export function addressAfter(base: string, offset: number): string | undefined {
  const address = parseIp(base);
  if (!address || !Number.isInteger(offset) || offset < 0) return undefined;
  const bytes = address.toByteArray().length;
  const n = toNumber(address) + BigInt(offset);
  return n >= 1n << BigInt(8 * bytes) ? undefined : fromNumber(n, bytes).toString();
}

/** The inverse of addressAt: the address's place in the subnet, or undefined when it lies outside. */
export function ordinalIn(cidr: string, ip: string): number | undefined {
  const subnet = subnetBounds(cidr);
  const address = parseIp(ip);
  if (!subnet || !address || address.kind() !== subnet.kind) return undefined;
  const n = toNumber(address);
  return n < subnet.network || n > subnet.broadcast ? undefined : Number(n - subnet.network);
}

/** The CIDR of prefix length `bits` that holds the address, in canonical form; undefined past the family's length. */
export function subnetOf(ip: string, bits: number): string | undefined {
  const address = parseIp(ip);
  if (!address || bits < 0 || bits > address.toByteArray().length * 8) return undefined;
  const family = address.kind() === 'ipv4' ? ipaddr.IPv4 : ipaddr.IPv6;
  return `${family.networkAddressFromCIDR(`${address.toString()}/${bits}`).toString()}/${bits}`;
}

/** A CIDR in canonical form (network address as Go prints it), to compare CIDRs spelt differently. */
export function canonicalCidr(cidr: string): string | undefined {
  const range = parseCidr(cidr);
  return range ? subnetOf(range[0].toString(), range[1]) : undefined;
}

/** One host-local range as its config writes it (`ranges[i][j]`, or the legacy top-level `subnet`). */
export interface HostLocalRange {
  subnet: string;
  rangeStart?: string;
  rangeEnd?: string;
  gateway?: string;
}

/** A range as host-local allocates from it: the addresses first..last, the gateway skipped. */
export interface RangeBounds {
  subnet: string;
  first: string;
  last: string;
  gateway: string;
  /** Addresses host-local can hand out (exact up to 2^53; an IPv6 /64 is rounded). */
  usable: number;
  contains: (ip: string) => boolean;
}

/**
 * host-local's Range.Canonicalize: first defaults to network+1, last to broadcast-1 for IPv4 and the last address
 * for IPv6, the gateway to network+1, and the allocator skips the gateway when it lies within.
 */
export function rangeBounds(range: HostLocalRange): RangeBounds | { error: string } {
  const subnet = subnetBounds(range.subnet);
  if (!subnet) return { error: `subnet ${JSON.stringify(range.subnet)} is no CIDR` };
  const [base, bits] = ipaddr.parseCIDR(range.subnet);
  if (toNumber(base) !== subnet.network) return { error: `subnet ${range.subnet} has host bits set (host-local refuses it)` };
  if (bits > subnet.bytes * 8 - 2) return { error: `subnet ${range.subnet} is too small to allocate from (host-local refuses it)` };
  const within = (label: string, text: string | undefined, fallback: bigint): bigint | { error: string } => {
    if (text === undefined) return fallback;
    const address = parseIp(text);
    const n = address && address.kind() === subnet.kind ? toNumber(address) : undefined;
    return n !== undefined && n >= subnet.network && n <= subnet.broadcast ? n : { error: `${label} ${text} is not in ${range.subnet}` };
  };
  const first = within('rangeStart', range.rangeStart, subnet.network + 1n);
  const last = within('rangeEnd', range.rangeEnd, subnet.kind === 'ipv4' ? subnet.broadcast - 1n : subnet.broadcast);
  const gateway = within('gateway', range.gateway, subnet.network + 1n);
  if (typeof first !== 'bigint') return first;
  if (typeof last !== 'bigint') return last;
  if (typeof gateway !== 'bigint') return gateway;
  if (last < first) return { error: `rangeEnd ${range.rangeEnd} comes before rangeStart ${range.rangeStart ?? '(network+1)'}` };
  const count = last - first + 1n - (gateway >= first && gateway <= last ? 1n : 0n);
  const contains = (ip: string) => {
    const address = parseIp(ip);
    if (!address || address.kind() !== subnet.kind) return false;
    const n = toNumber(address);
    return n >= first && n <= last;
  };
  const text = (n: bigint) => fromNumber(n, subnet.bytes).toString();
  return { subnet: range.subnet, first: text(first), last: text(last), gateway: text(gateway), usable: Number(count), contains };
}

/** Usable pod addresses of a subnet with host-local's defaults: a /25 has 126 hosts, one the gateway takes, so 125. */
export function usablePodAddresses(cidr: string): number {
  const bounds = rangeBounds({ subnet: cidr });
  return 'error' in bounds ? 0 : bounds.usable;
}

/** The ranges of a host-local `ipam` section, in host-local's order: the legacy top-level range first, then `ranges`. */
export function hostLocalRanges(ipam: { subnet?: unknown; rangeStart?: unknown; rangeEnd?: unknown; gateway?: unknown; ranges?: unknown }): HostLocalRange[] {
  const asRange = (r: Record<string, unknown>): HostLocalRange => ({
    subnet: String(r.subnet),
    ...(typeof r.rangeStart === 'string' ? { rangeStart: r.rangeStart } : {}),
    ...(typeof r.rangeEnd === 'string' ? { rangeEnd: r.rangeEnd } : {}),
    ...(typeof r.gateway === 'string' ? { gateway: r.gateway } : {}),
  });
  const sets = Array.isArray(ipam.ranges) ? (ipam.ranges as unknown[]).filter(Array.isArray).flat() : [];
  const listed = sets.filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null && 'subnet' in r).map(asRange);
  return typeof ipam.subnet === 'string' ? [asRange(ipam as Record<string, unknown>), ...listed] : listed;
}
