import { describe, expect, it } from 'vitest';
import { parsePolicy, policyRefusals } from '../../../src/agent/policy.js';
import { agentlessSeconds, describeRun, readSpec, runArguments, runOf, upgradeSpecOf, type RunSpec } from '../../../src/agent/spec.js';
import { refuseNotCarried } from '../../../src/cli/via-agent.js';
import { DEFAULT_RUN_OPTIONS, type RunOptions } from '../../../src/runbook/options.js';

// A MaintenanceRun's spec: what a caller's flags make of it, what the agent reads back, what it builds from it, and
// what the owner's policy says of it.

const options = (extra: Partial<RunOptions> = {}): RunOptions => ({ ...DEFAULT_RUN_OPTIONS, node: 'n1', targets: { containerd: '1.6.20~ds1-1+deb12u3' }, ...extra });
const at = { kubeconfig: '/run/k', textfileDir: '/m', leaseNamespace: 'kube-system', smokeNamespace: 'smoke' };

describe("a run's spec", () => {
  it('carries only what differs from the runbook\'s defaults, and comes back as the same flags', () => {
    const upgrade = upgradeSpecOf(options({ reboot: 'if-required', rebootTimeoutSeconds: 900, drain: { ...DEFAULT_RUN_OPTIONS.drain, ignoreDaemonSets: true, gracePeriodSeconds: 5 }, lockTimeoutSeconds: 30 }));
    expect(upgrade).toEqual({ targets: [{ package: 'containerd', version: '1.6.20~ds1-1+deb12u3' }], reboot: 'if-required', drain: { ignoreDaemonSets: true, gracePeriodSeconds: 5 }, timeouts: { lockSeconds: 30, rebootSeconds: 900 } });
    const spec: RunSpec = { nodeName: 'n1', requestedBy: 'alice', command: 'upgrade', upgrade };
    expect(readSpec(spec, 'n1')).toBe(spec);
    expect(runArguments(spec, at)).toEqual({
      command: 'upgrade-node',
      args: ['n1', '--output', 'text', '--transport', 'local', '--kubeconfig', '/run/k', '--textfile-dir', '/m', '--lease-namespace', 'kube-system', '--smoke-namespace', 'smoke', '--to', 'containerd=1.6.20~ds1-1+deb12u3', '--reboot-if-required', '--ignore-daemonsets', '--grace-period=5', '--lock-timeout', '30s', '--reboot-timeout', '900s'],
    });
    expect(describeRun(spec)).toBe('upgrade containerd=1.6.20~ds1-1+deb12u3, reboot if-required');
    expect(upgradeSpecOf(options({ targets: {} }), { origin: 'Debian-Security' })).toEqual({ pendingUpgrades: { origin: 'Debian-Security' } });
    expect(runArguments({ nodeName: 'n1', requestedBy: 'a', command: 'audit', output: 'json', audit: { clusterWide: true } }, at).args).toEqual(['n1', '--output', 'json', '--transport', 'local', '--kubeconfig', '/run/k', '--textfile-dir', '/m', '--lease-namespace', 'kube-system', '--cluster-wide']);
  });

  it('tells two asks apart by what they ask, not by who asked or whether it was stopped', () => {
    const a: RunSpec = { nodeName: 'n1', requestedBy: 'alice', command: 'upgrade', upgrade: { reboot: 'always' } };
    expect(runOf({ ...a, requestedBy: 'bob', stop: { reason: 'SIGINT' } })).toBe(runOf(a));
    expect(runOf({ ...a, upgrade: { reboot: 'if-required' } })).not.toBe(runOf(a));
    // As the API gives it back: its own order of keys.
    const twice = { nodeName: 'n1', requestedBy: 'a', command: 'upgrade' as const, upgrade: { targets: [{ package: 'runc', version: '1' }], drain: { force: true, ignoreDaemonSets: true } } };
    expect(runOf({ upgrade: { drain: { ignoreDaemonSets: true, force: true }, targets: [{ version: '1', package: 'runc' }] }, command: 'upgrade', requestedBy: 'a', nodeName: 'n1' })).toBe(runOf(twice));
  });

  it('is refused, every problem named, when it asks nothing, mixes fields, or carries a field the agent does not know', () => {
    expect(() => readSpec({ nodeName: 'n1', requestedBy: 'a', command: 'upgrade', upgrade: {} }, 'n1')).toThrow('spec.upgrade asks nothing');
    expect(() => readSpec({ nodeName: 'n1', requestedBy: 'a', command: 'upgrade', upgrade: { targets: [{ package: 'runc', version: '1' }], pendingUpgrades: {} } }, 'n1')).toThrow('pendingUpgrades and targets do not go together');
    expect(() => readSpec({ nodeName: 'n1', requestedBy: 'a', command: 'upgrade', upgrade: { reboot: 'always', drain: { timeoutSeconds: 0, force: 'yes' } } }, 'n1')).toThrow('spec.upgrade.drain.force must be true or false; spec.upgrade.drain.timeoutSeconds must be a whole number of seconds from 1 to 86400 (got 0)');
    expect(() => readSpec({ nodeName: 'n1', requestedBy: 'a', command: 'shell' }, 'n1')).toThrow('spec.command must be upgrade or audit (got "shell")');
    expect(() => readSpec({ nodeName: 'n1', requestedBy: 'a', command: 'audit', upgrade: { reboot: 'always' } }, 'n1')).toThrow('an audit carries no spec.upgrade');
    expect(() => readSpec({ nodeName: 'n1', requestedBy: 'a', command: 'audit', textfileDir: '/etc/cron.d' }, 'n1')).toThrow('spec.textfileDir is not a field this agent knows');
  });

  it('bounds how long the run may go without its agent by its own timeouts', () => {
    expect(agentlessSeconds({ nodeName: 'n1', requestedBy: 'a', command: 'upgrade', upgrade: { targets: [] } })).toBe(120 + 600 + 300 + 600);
    expect(agentlessSeconds({ nodeName: 'n1', requestedBy: 'a', command: 'upgrade', upgrade: { reboot: 'always', timeouts: { rebootSeconds: 900 } } })).toBe(120 + 600 + 900 + 300 + 600);
  });
});

describe("a caller's flags through the agent", () => {
  it('refuses by name, before anything is asked, a flag the agent does not carry', () => {
    expect(() => refuseNotCarried({ 'hook-before-drain': 'curl x' })).toThrow('--hook-before-drain does not go with --via agent: a hook is a command');
    expect(() => refuseNotCarried({ 'reboot-command': 'x' })).toThrow('--reboot-command does not go with --via agent: it is a command');
    expect(() => refuseNotCarried({ 'textfile-dir': '/etc/cron.d' })).toThrow('--textfile-dir does not go with --via agent: it is a folder the run would write in as root');
    expect(() => refuseNotCarried({ 'lease-namespace': 'x' })).toThrow("--lease-namespace does not go with --via agent: the agent's policy sets where its runs keep their Lease");
    expect(() => refuseNotCarried({ 'ssh-host': 'h' })).toThrow('--ssh-host does not go with --via agent: the agent runs on the node itself');
    expect(() => refuseNotCarried({ to: 'containerd=1', reboot: true })).not.toThrow();
  });
});

describe("the owner's policy", () => {
  it('is read strictly: an unknown key or a wrong kind of value is an error, never ignored', () => {
    expect(parsePolicy('')).toMatchObject({ packages: [], reboot: false, leaseNamespace: 'kube-system', smokeNamespace: 'node-maint-smoke' });
    expect(() => parsePolicy('pakages: [sudo]')).toThrow('the agent\'s policy has an unknown key "pakages"');
    expect(() => parsePolicy('reboot: yes please')).toThrow("the agent's policy: reboot must be true or false");
    expect(() => parsePolicy('packages: ["runc; rm -rf /"]')).toThrow("the agent's policy: packages must be a list of package names");
    expect(() => parsePolicy('leaseNamespace: Kube_System')).toThrow('invalid leaseNamespace in the agent\'s policy "Kube_System"');
    expect(() => parsePolicy('[1, 2]')).toThrow("the agent's policy must be a mapping of its keys");
  });

  it('allows what it names, and pending upgrades only from its origins', () => {
    const policy = parsePolicy('packages: [containerd]\npendingUpgrades: true\npendingOrigins: [Debian-Security]\nreboot: true\n');
    const spec = (upgrade: RunSpec['upgrade']): RunSpec => ({ nodeName: 'n1', requestedBy: 'a', command: 'upgrade', upgrade });
    expect(policyRefusals(spec({ targets: [{ package: 'containerd', version: '2' }], reboot: 'always' }), policy)).toEqual([]);
    expect(policyRefusals(spec({ pendingUpgrades: { origin: 'Debian-Security' } }), policy)).toEqual([]);
    expect(policyRefusals(spec({ pendingUpgrades: {} }), policy)).toEqual(['pending upgrades of every origin (the agent\'s policy allows those of Debian-Security)']);
    expect(policyRefusals(spec({ targets: [{ package: 'containerd', version: '2' }], drain: { gracePeriodSeconds: -1 } }), policy)).toEqual([]);
    expect(policyRefusals({ nodeName: 'n1', requestedBy: 'a', command: 'audit', audit: { clusterWide: true } }, policy)).toEqual(["an audit of the whole cluster (the agent's policy: clusterWideAudit: false)"]);
  });
});
