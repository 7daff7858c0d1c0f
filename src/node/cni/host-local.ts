import { isIP } from 'node:net';
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

/** Usable host addresses of an IPv4 CIDR: a /25 has 126 hosts, one the gateway takes, so 125 for pods. */
export function usablePodAddresses(cidr: string): number {
  const bits = Number(cidr.split('/')[1]);
  if (!cidr.includes('.') || !Number.isInteger(bits)) return 0;
  const hosts = 2 ** (32 - bits) - 2;
  return Math.max(0, hosts - 1);
}

const ipv4ToInt = (a: string) => a.split('.').reduce((acc, part) => (acc << 8) + Number(part), 0) >>> 0;

/** A predicate for "this IPv4 address is in this CIDR", the CIDR parsed once. */
export function cidrContains(cidr: string): (ip: string) => boolean {
  const [base, bitsText] = cidr.split('/');
  if (!base || isIP(base) !== 4) return () => false;
  const bits = Number(bitsText);
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  const network = (ipv4ToInt(base) & mask) >>> 0;
  return (ip) => isIP(ip) === 4 && ((ipv4ToInt(ip) & mask) >>> 0) === network;
}

export function ipv4InCidr(ip: string, cidr: string): boolean {
  return cidrContains(cidr)(ip);
}
