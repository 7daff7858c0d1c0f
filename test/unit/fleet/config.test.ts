import { describe, expect, it } from 'vitest';
import { parseFleetConfig } from '../../../src/fleet/config.js';
import { planFleetWaves, planWaves } from '../../../src/fleet/waves.js';

// As the engine lists secret keys to the program: node-maint:sshKey when set with `pulumi config set --secret`.
const SECRET = { secretKeys: ['node-maint:sshKey'] };
const PLAIN = { secretKeys: [] };
// A real key's shape (ssh-keygen -t ed25519), its body cut: only the armour is checked.
const KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n';

const base = {
  'node-maint:nodes': '["real-node","fleet-1","fleet-2","fleet-3"]',
  'node-maint:targets': '{"containerd":"1.6.20~ds1-1+deb12u3"}',
  'node-maint:maxUnavailable': '2',
};

describe('fleet stack config', () => {
  it('reads a valid config with defaults', () => {
    const c = parseFleetConfig({ ...base, 'node-maint:ssh': '{"user":"maint","hosts":{"real-node":"127.0.0.1:2222"}}', 'aws:region': 'x' }, PLAIN);
    expect(c).toMatchObject({ nodes: ['real-node', 'fleet-1', 'fleet-2', 'fleet-3'], maxUnavailable: 2, leaseNamespace: 'kube-system', ssh: { user: 'maint', port: 22, hosts: { 'real-node': '127.0.0.1:2222' } } });
    expect(c.drain).toMatchObject({ ignoreDaemonSets: false, gracePeriodSeconds: -1 });
    expect(c.allowControlPlane).toBe(false);
  });

  it.each([
    [{ 'node-maint:maxUnavailble': '2' }, /node-maint:maxUnavailble: unknown key \(did you mean node-maint:maxUnavailable\?\)/],
    [{ 'node-maint:maxUnavailable': '"two"' }, /node-maint:maxUnavailable: must be a whole number >= 1/],
    [{ 'node-maint:maxUnavailable': '0' }, /maxUnavailable: must be a whole number >= 1/],
    [{ 'node-maint:targets': '{"containerd":"latest"}' }, /node-maint:targets: malformed version "latest"/],
    [{ 'node-maint:nodes': '["ok","bad;node"]' }, /node-maint:nodes: invalid node name/],
    [{ 'node-maint:drain': '{"ignoreDaemonset":true}' }, /node-maint:drain.ignoreDaemonset: unknown setting \(did you mean drain.ignoreDaemonSets\?\)/],
    [{ 'node-maint:ssh': '{"port":70000}' }, /node-maint:ssh.port: must be 1-65535/],
    [{ 'node-maint:sshKey': 'hunter2' }, /node-maint:sshKey: must be a private key/],
    [{ 'node-maint:nodeSelector': 'a=b' }, /set nodes or nodeSelector, not both/],
    [{ 'node-maint:allowControlPlane': '"yes"' }, /node-maint:allowControlPlane: must be true or false/],
  ])('names the key of a bad setting: %j', (override, message) => {
    expect(() => parseFleetConfig({ ...base, ...override }, SECRET)).toThrow(message);
  });

  it('requires nodes or a selector, and targets', () => {
    expect(() => parseFleetConfig({ 'node-maint:targets': base['node-maint:targets'] }, PLAIN)).toThrow(/node-maint:nodes: set either nodes/);
    expect(() => parseFleetConfig({ 'node-maint:nodes': base['node-maint:nodes'] }, PLAIN)).toThrow(/node-maint:targets: required/);
  });
});

describe('the SSH key in stack config', () => {
  it('accepts a key set with --secret', () => {
    expect(parseFleetConfig({ ...base, 'node-maint:sshKey': KEY }, SECRET).sshKey).toBe(KEY);
  });

  it.each([
    // what is set, a part of it no message may show
    ['a real key', KEY, 'b3BlbnNzaC1rZXkt'],
    ['a malformed value', 'hunter2', 'hunter2'],
  ])('refuses %s set in plain text, naming the fix and never the value', (_, value, secretPart) => {
    let error: Error | undefined;
    try {
      parseFleetConfig({ ...base, 'node-maint:sshKey': value }, PLAIN);
    } catch (e) {
      error = e as Error;
    }
    expect(error?.name).toBe('ConfigError');
    expect(error?.message).toMatch(/^config node-maint:sshKey: is in the stack file in plain text, not a secret; /);
    expect(error?.message).toContain('`pulumi config rm node-maint:sshKey`, then `cat KEY | pulumi config set --secret node-maint:sshKey`');
    expect(error?.message).not.toContain(secretPart);
  });

  it('is refused in plain text before any other setting is looked at', () => {
    expect(() => parseFleetConfig({ 'node-maint:sshKey': KEY }, { secretKeys: ['node-maint:kubeconfig'] })).toThrow(/sshKey: is in the stack file in plain text/);
  });

  it('asks nothing of a stack without an SSH key', () => {
    expect(parseFleetConfig(base, PLAIN).sshKey).toBeUndefined();
  });
});

describe('waves', () => {
  it('never puts more than maxUnavailable nodes in one wave, in order', () => {
    expect(planWaves(['a', 'b', 'c', 'd', 'e'], 2)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(planWaves(['a'], 3)).toEqual([['a']]);
    // Control-plane nodes after every worker, one per wave.
    expect(planFleetWaves(['w1', 'w2', 'w3'], ['cp1', 'cp2'], 2)).toEqual([['w1', 'w2'], ['w3'], ['cp1'], ['cp2']]);
    expect(() => planWaves(['a'], 0)).toThrow();
  });
});
