import { describe, expect, it } from 'vitest';
import { addressAt, canonicalIp, canonicalCidr, ipInCidr, ordinalIn, rangeBounds, subnetOf, usablePodAddresses } from '../../../src/node/cni/host-local.js';

// Address math for IPv4 and IPv6 alike (ipaddr.js underneath): Calico block ordinals, host-local ranges.
describe('address math', () => {
  it.each([
    ['10.244.1.0/26', 0, '10.244.1.0'],
    ['10.244.1.0/26', 63, '10.244.1.63'],
    ['10.244.1.0/26', 64, undefined],
    ['10.244.255.192/26', 63, '10.244.255.255'],
    ['fd00:10:244:1::/122', 10, 'fd00:10:244:1::a'],
    ['fd00:10:244:1::/122', 63, 'fd00:10:244:1::3f'],
    ['fd00:10:244:1:ffff:ffff:ffff:ff00/120', 255, 'fd00:10:244:1:ffff:ffff:ffff:ffff'],
    ['not-a-cidr', 0, undefined],
  ])('%s: address %i is %s, and back', (cidr, ordinal, ip) => {
    expect(addressAt(cidr, ordinal)).toBe(ip);
    if (ip !== undefined) expect(ordinalIn(cidr, ip)).toBe(ordinal);
  });

  it.each([
    ['10.253.6.200', '10.253.6.128/25', true],
    ['10.253.6.100', '10.253.6.128/25', false],
    ['fd00:10:244:6::2', 'fd00:10:244:6::/64', true],
    ['fd00:10:244:7::2', 'fd00:10:244:6::/64', false],
    ['10.253.6.200', 'fd00::/8', false],
    ['fd00::1', '10.0.0.0/8', false],
    ['10.1', '10.0.0.0/8', false],
  ])('%s in %s: %s', (ip, cidr, inside) => {
    expect(ipInCidr(ip, cidr)).toBe(inside);
  });

  it('meets two spellings of one address or CIDR, as Go prints them', () => {
    expect(canonicalIp('FD00:0:0::0A')).toBe('fd00::a');
    expect(canonicalCidr('fd00:0:0:0::/64')).toBe('fd00::/64');
    expect(subnetOf('fd00:10:244:1::3f', 122)).toBe('fd00:10:244:1::/122');
    expect(subnetOf('10.244.1.63', 122)).toBeUndefined();
  });
});

describe('host-local ranges', () => {
  it.each([
    ['10.253.6.128/25', 125],
    ['10.88.0.0/16', 65_533],
    ['fd00::/120', 254],
    ['10.0.0.0/30', 1],
    ['10.0.0.1/24', 0],
  ])('%s has %i usable pod addresses', (cidr, usable) => {
    expect(usablePodAddresses(cidr)).toBe(usable);
  });

  it('refuses what host-local refuses, with why', () => {
    expect(rangeBounds({ subnet: '10.0.0.1/24' })).toEqual({ error: expect.stringMatching(/host bits/) });
    expect(rangeBounds({ subnet: '10.0.0.0/31' })).toEqual({ error: expect.stringMatching(/too small/) });
    expect(rangeBounds({ subnet: '10.0.0.0/24', rangeStart: '10.0.1.1' })).toEqual({ error: expect.stringMatching(/not in 10\.0\.0\.0\/24/) });
    expect(rangeBounds({ subnet: '10.0.0.0/24', rangeStart: '10.0.0.9', rangeEnd: '10.0.0.3' })).toEqual({ error: expect.stringMatching(/before/) });
  });
});
