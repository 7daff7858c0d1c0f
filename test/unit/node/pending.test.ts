import { describe, expect, it } from 'vitest';
import { parsePendingUpgrades, pendingTargets } from '../../../src/node/packages/pending.js';

// apt-get -s upgrade as Debian 12 prints it: held packages kept back, each upgrade with its origins.
const SIMULATION = `Reading package lists...
Building dependency tree...
Reading state information...
Calculating upgrade...
The following packages have been kept back:
  containerd
The following packages will be upgraded:
  libssl3 openssl node-maint-os-patch
3 upgraded, 0 newly installed, 0 to remove and 1 not upgraded.
Inst libssl3 [3.0.15-1~deb12u1] (3.0.17-1~deb12u2 Debian-Security:12/stable-security [amd64])
Inst openssl [3.0.15-1~deb12u1] (3.0.17-1~deb12u2 Debian:12.11/stable, Debian-Security:12/stable-security [amd64])
Inst node-maint-os-patch [1.0-1] (1.0-2 . [all])
Conf libssl3 (3.0.17-1~deb12u2 Debian-Security:12/stable-security [amd64])
Conf openssl (3.0.17-1~deb12u2 Debian:12.11/stable, Debian-Security:12/stable-security [amd64])
Conf node-maint-os-patch (1.0-2 . [all])
`;

describe('the upgrades apt has pending', () => {
  it('are read from the simulation with their origins, held packages left out as apt leaves them', () => {
    expect(parsePendingUpgrades(SIMULATION)).toEqual([
      { name: 'libssl3', from: '3.0.15-1~deb12u1', to: '3.0.17-1~deb12u2', origins: ['Debian-Security:12/stable-security'] },
      { name: 'openssl', from: '3.0.15-1~deb12u1', to: '3.0.17-1~deb12u2', origins: ['Debian:12.11/stable', 'Debian-Security:12/stable-security'] },
      { name: 'node-maint-os-patch', from: '1.0-1', to: '1.0-2', origins: ['.'] },
    ]);
  });

  it('become targets, all of them or those of one origin', () => {
    const pending = parsePendingUpgrades(SIMULATION);
    expect(pendingTargets(pending)).toEqual({ libssl3: '3.0.17-1~deb12u2', openssl: '3.0.17-1~deb12u2', 'node-maint-os-patch': '1.0-2' });
    expect(pendingTargets(pending, 'Debian-Security')).toEqual({ libssl3: '3.0.17-1~deb12u2', openssl: '3.0.17-1~deb12u2' });
    expect(pendingTargets(pending, 'nowhere')).toEqual({});
  });
});
