import { describe, expect, it } from 'vitest';
import { parseFacts } from '../../../src/agent/facts.js';
import { agentRunArgs } from '../../../src/fleet/through-agent.js';
import { observedFromFacts } from '../../../src/fleet/observe.js';
import type { NodeUpgradeInputs } from '../../../src/fleet/apply.js';

// What a containerd node of the bed prints for the facts script (dpkg-query, apt-cache madison, the sentinel).
const OUT = [
  'containerd\t1.6.20~ds1-1+deb12u2\thi ',
  'runc\t1.1.5+ds1-1+deb12u1\tii ',
  '@@node-maint-offered',
  'containerd\t1.6.20~ds1-1+deb12u3',
  'containerd\t1.6.20~ds1-1+deb12u2',
  'runc\t1.1.5+ds1-1+deb12u1',
  '@@node-maint-reboot',
  'required',
  'linux-image-6.1.0-28-amd64 ',
].join('\n');

describe("a node's facts, as its agent publishes them", () => {
  const at = new Date('2026-11-29T04:00:00Z');
  const facts = parseFacts('n1', ['containerd', 'docker.io', 'runc'], OUT, at);

  it('says what is installed, what is offered and whether a reboot is due', () => {
    expect(facts).toEqual({
      node: 'n1',
      at: '2026-11-29T04:00:00.000Z',
      installed: { containerd: '1.6.20~ds1-1+deb12u2', 'docker.io': 'not installed', runc: '1.1.5+ds1-1+deb12u1' },
      offered: { containerd: ['1.6.20~ds1-1+deb12u3', '1.6.20~ds1-1+deb12u2'], 'docker.io': [], runc: ['1.1.5+ds1-1+deb12u1'] },
      rebootRequired: '/var/run/reboot-required is there (for linux-image-6.1.0-28-amd64)',
    });
  });

  it("are the fleet's look at the node while fresh; missing, stale or silent about a target, the node is not observed", () => {
    const targets = { containerd: '1.6.20~ds1-1+deb12u3' };
    expect(observedFromFacts('n1', facts, targets, true, at.getTime() + 60_000)).toEqual({
      installed: { containerd: '1.6.20~ds1-1+deb12u2' },
      offered: { containerd: ['1.6.20~ds1-1+deb12u3', '1.6.20~ds1-1+deb12u2'] },
      rebootRequired: '/var/run/reboot-required is there (for linux-image-6.1.0-28-amd64)',
    });
    expect(observedFromFacts('n1', facts, targets, false, at.getTime())).not.toHaveProperty('rebootRequired');
    expect(observedFromFacts('n1', undefined, targets, false)).toMatch(/^no facts from a node-maint agent on it/);
    expect(observedFromFacts('n1', facts, targets, false, at.getTime() + 20 * 60_000)).toBe("its agent's facts are 20 min old (from 2026-11-29T04:00:00.000Z; an agent publishes every 5 min: is it running?)");
    expect(observedFromFacts('n1', facts, { 'containerd.io': '1.7' }, false, at.getTime())).toBe('its agent does not report containerd.io (it reports containerd, docker.io, runc: NODE_MAINT_PACKAGES in its DaemonSet)');
  });
});

describe("a fleet node's run through its agent", () => {
  it("carries the fleet's run options as upgrade-node's flags, and nothing about reaching the node", () => {
    const inputs = {
      node: 'n1',
      connection: { kind: 'agent' },
      targets: { containerd: '2', 'docker.io': '3' },
      reboot: { policy: 'if-required', timeoutSeconds: 900 },
      drain: { ignoreDaemonSets: true, deleteEmptyDirData: false, force: true, gracePeriodSeconds: -1, timeoutSeconds: 600, skipWaitForDeleteTimeoutSeconds: 0 },
      leaseNamespace: 'maint',
      allowNoRollback: true,
    } as NodeUpgradeInputs;
    expect(agentRunArgs(inputs)).toEqual([
      'n1', '--output', 'json', '--to', 'containerd=2,docker.io=3', '--reboot-if-required', '--reboot-timeout', '900s',
      '--ignore-daemonsets', '--force', '--grace-period=-1', '--timeout', '600s', '--skip-wait-for-delete-timeout', '0s', '--lease-namespace', 'maint', '--allow-no-rollback',
    ]);
  });
});
