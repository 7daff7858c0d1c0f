import { describe, expect, it } from 'vitest';
import { cacheConfig, parseCacheEntry } from '../../../src/node/cni/cache.js';
import { ipInCidr, parseReservation, usablePodAddresses } from '../../../src/node/cni/host-local.js';
import { delCalls, parseReplayOutput, planReplay, replayScript } from '../../../src/node/cni/replay.js';

const ID = 'a'.repeat(64);

describe('host-local files', () => {
  it('reads both content formats and skips bookkeeping', () => {
    expect(parseReservation('kubenet', '/d/10.0.0.5', '10.0.0.5', `${ID}\r\neth0`, 1)).toMatchObject({ containerId: ID, ifName: 'eth0' });
    expect(parseReservation('kubenet', '/d/10.0.0.6', '10.0.0.6', ID, 1)).toMatchObject({ containerId: ID, ifName: null });
    expect(parseReservation('kubenet', '/d/lock', 'lock', '', 1)).toBeNull();
    expect(parseReservation('kubenet', '/d/last_reserved_ip.0', 'last_reserved_ip.0', '10.0.0.6', 1)).toBeNull();
  });
  it('counts 125 usable pod addresses in a /25, as the field report', () => {
    expect(usablePodAddresses('10.253.6.128/25')).toBe(125);
    expect(ipInCidr('10.253.6.200', '10.253.6.128/25')).toBe(true);
    expect(ipInCidr('10.253.6.100', '10.253.6.128/25')).toBe(false);
  });
});

describe('libcni cache entries', () => {
  const config = JSON.stringify({ cniVersion: '1.0.0', name: 'net', plugins: [{ type: 'bridge', ipam: { type: 'host-local' } }, { type: 'portmap', capabilities: { portMappings: true } }] });
  const v1 = JSON.stringify({ kind: 'cniCacheV1', containerId: ID, config: Buffer.from(config).toString('base64'), ifName: 'eth0', networkName: 'net', cniArgs: [['K8S_POD_NAME', 'p']], capabilityArgs: { portMappings: [{ hostPort: 80 }], bandwidth: {} }, result: { cniVersion: '1.0.0', ips: [{ address: '10.0.0.7/24' }] } });

  it('reads cniCacheV1 and the legacy result-only form', () => {
    const entry = parseCacheEntry('/c/net-x-eth0', `net-${ID}-eth0`, v1, 1);
    expect(entry).toMatchObject({ format: 'cniCacheV1', containerId: ID, ips: ['10.0.0.7'] });
    expect(cacheConfig(entry)).toBe(config);
    const legacy = parseCacheEntry('/c/kubenet', `kubenet-${ID}-eth0`, JSON.stringify({ cniVersion: '0.2.0', ip4: { ip: '10.253.9.21/25' } }), 1);
    expect(legacy).toMatchObject({ format: 'legacy', networkName: 'kubenet', containerId: ID, ifName: 'eth0', ips: ['10.253.9.21'] });
  });

  it('replays DEL like libcni: reverse order, prevResult from 0.4.0, only declared capabilities', () => {
    const calls = delCalls(config, { ips: [] }, { portMappings: [{ hostPort: 80 }], bandwidth: {} });
    expect(calls.map((c) => c.type)).toEqual(['portmap', 'bridge']);
    const portmap = JSON.parse(calls[0]!.stdin);
    expect(portmap).toMatchObject({ name: 'net', cniVersion: '1.0.0', prevResult: { ips: [] }, runtimeConfig: { portMappings: [{ hostPort: 80 }] } });
    expect(JSON.parse(calls[1]!.stdin).runtimeConfig).toBeUndefined();
    const old = delCalls(JSON.stringify({ cniVersion: '0.1.0', name: 'kubenet', type: 'bridge' }), { ip4: {} });
    expect(JSON.parse(old[0]!.stdin).prevResult).toBeUndefined();
  });

  it('rebuilds kubenet config for result-only entries from the PodCIDR, and refuses what it cannot rebuild', () => {
    const legacy = parseCacheEntry('/c/k', `kubenet-${ID}-eth0`, JSON.stringify({ cniVersion: '0.2.0', ip4: { ip: '10.253.9.21/25' } }), 1);
    const planned = planReplay(legacy, '', { podCidr: '10.253.9.0/25', configsByNetwork: new Map() });
    expect('calls' in planned && planned.source).toBe('rebuilt');
    expect('calls' in planned && JSON.parse(planned.calls[0]!.stdin).ipam.ranges[0][0].subnet).toBe('10.253.9.0/25');
    const other = parseCacheEntry('/c/x', `weird-${ID}-eth0`, JSON.stringify({ ips: [] }), 1);
    expect(planReplay(other, '', { configsByNetwork: new Map() })).toMatchObject({ reason: expect.stringMatching(/no config/) });
  });

  it('rejects plugin types that would escape the plugin directory', () => {
    expect(() => delCalls(JSON.stringify({ name: 'n', type: '../../bin/sh' }), undefined)).toThrow(/invalid plugin type/);
  });

  it('writes one script that removes an entry only after its DEL succeeded', () => {
    const planned = planReplay(parseCacheEntry('/c/e', `net-${ID}-eth0`, v1, 1), '/proc/1/ns/net', { configsByNetwork: new Map() });
    if (!('calls' in planned)) throw new Error('expected a replay');
    const script = replayScript([planned], '/opt/cni/bin');
    expect(script).toContain("CNI_COMMAND=DEL CNI_CONTAINERID=");
    expect(script.indexOf('/opt/cni/bin/portmap')).toBeLessThan(script.indexOf('/opt/cni/bin/bridge'));
    expect(script).toMatch(/if \[ \$rc = 0 \]; then rm -f \/c\/e/);
    expect(parseReplayOutput('ok\t/c/e\nfail\t/c/f\tno such file\n')).toEqual({ ok: new Set(['/c/e']), failed: new Map([['/c/f', 'no such file']]) });
  });
});
