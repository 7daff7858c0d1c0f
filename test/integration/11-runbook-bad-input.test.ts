import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, realNodeFingerprint, resetRealNode, sshFlags, upgradeNode } from './bed.js';

const withFlag = (flags: string[], name: string, value: string) => {
  const out = [...flags];
  out[out.indexOf(name) + 1] = value;
  return out;
};

describe('upgrade-node refuses bad input with its documented exit code and changes nothing', () => {
  let before: Record<string, string>;
  beforeAll(async () => {
    await resetRealNode();
    before = await realNodeFingerprint();
  });

  const target = () => `containerd=${bed().containerd.new}`;
  const cases: Array<[string, () => string[], number, RegExp]> = [
    ['an unknown node', () => ['no-such-node', '--to', target(), ...sshFlags(bed().realNode)], 3, /node no-such-node does not exist/],
    ['a malformed version', () => [bed().realNode, '--to', 'containerd=latest', ...sshFlags(bed().realNode)], 2, /malformed version "latest"/],
    ['shell metacharacters in the version', () => [bed().realNode, '--to', 'containerd=1.6.20;reboot', ...sshFlags(bed().realNode)], 2, /malformed version/],
    ['shell metacharacters in the node name', () => ['real-node;id', '--to', target(), ...sshFlags(bed().realNode)], 2, /invalid node name/],
    ['shell metacharacters in the SSH user', () => [bed().realNode, '--to', target(), ...withFlag(sshFlags(bed().realNode), '--ssh-user', 'root$(id)')], 2, /invalid --ssh-user/],
    ['a flag typo', () => [bed().realNode, '--to', target(), '--ignore-daemonset', ...sshFlags(bed().realNode)], 2, /Unknown option '--ignore-daemonset'/],
    ['an unknown kubeconfig context', () => [bed().realNode, '--to', target(), '--context', 'prod', ...sshFlags(bed().realNode)], 2, /no context named prod/],
    ['an unreachable host', () => [bed().realNode, '--to', target(), ...withFlag(sshFlags(bed().realNode), '--ssh-port', '1')], 5, /cannot connect/],
    ['a version the node cannot install', () => [bed().realNode, '--to', 'containerd=9.9.9-1', ...DRAIN_FLAGS, ...sshFlags(bed().realNode)], 10, /not available from real-node's package sources/],
  ];

  it.each(cases)('%s', async (_name, args, code, message) => {
    const result = await upgradeNode(args());
    expect(result.code, result.stderr).toBe(code);
    expect(result.stderr + result.stdout).toMatch(message);
    expect(await realNodeFingerprint()).toEqual(before);
  });

  it('a host key that does not match known_hosts (never accepted blindly)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-maint-'));
    const wrong = join(dir, 'known_hosts');
    // A real key, but not this host's: the bed's own client key, listed for the node's address.
    const { readFileSync } = await import('node:fs');
    const [type, key] = readFileSync(`${bed().sshKey}.pub`, 'utf8').split(' ');
    writeFileSync(wrong, `[127.0.0.1]:2222 ${type} ${key}\n`);
    const result = await upgradeNode([bed().realNode, '--to', target(), ...withFlag(sshFlags(bed().realNode), '--known-hosts', wrong)]);
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(/does not match/);
    const unknown = join(dir, 'empty');
    writeFileSync(unknown, '');
    const second = await upgradeNode([bed().realNode, '--to', target(), ...withFlag(sshFlags(bed().realNode), '--known-hosts', unknown)]);
    expect(second.code).toBe(6);
    expect(second.stderr).toMatch(/is not in .*add its host key first/);
    expect(await realNodeFingerprint()).toEqual(before);
  });

  it('--output json carries the error for machines', async () => {
    const result = await upgradeNode(['no-such-node', '--to', target(), '--output', 'json', ...sshFlags(bed().realNode)]);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({ result: 'error', exitCode: 3, error: { code: 'nodeNotFound' } });
  });
});
