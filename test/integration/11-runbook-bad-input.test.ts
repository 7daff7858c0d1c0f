import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, upgradeNode } from './bed.js';
import { nodeFingerprint } from './fixtures.js';
import { useNodes } from './pool.js';

const withFlag = (flags: string[], name: string, value: string) => {
  const out = [...flags];
  out[out.indexOf(name) + 1] = value;
  return out;
};

describe('upgrade-node refuses bad input with its documented exit code and changes nothing', () => {
  const [t] = useNodes('any');
  let before: Record<string, string>;
  beforeAll(async () => {
    before = await nodeFingerprint(t);
  });

  const target = () => `containerd=${bed().containerd.new}`;
  const cases: Array<[string, () => string[], number, () => RegExp]> = [
    ['an unknown node', () => ['no-such-node', '--to', target(), ...t.flags], 3, () => /node no-such-node does not exist/],
    ['a malformed version', () => [t.name, '--to', 'containerd=latest', ...t.flags], 2, () => /malformed version "latest"/],
    ['shell metacharacters in the version', () => [t.name, '--to', 'containerd=1.6.20;reboot', ...t.flags], 2, () => /malformed version/],
    ['shell metacharacters in the node name', () => [`${t.name};id`, '--to', target(), ...t.flags], 2, () => /invalid node name/],
    ['shell metacharacters in the SSH user', () => [t.name, '--to', target(), ...withFlag(t.flags, '--ssh-user', 'root$(id)')], 2, () => /invalid --ssh-user/],
    ['a flag typo', () => [t.name, '--to', target(), '--ignore-daemonset', ...t.flags], 2, () => /Unknown option '--ignore-daemonset'/],
    ['an unknown kubeconfig context', () => [t.name, '--to', target(), '--context', 'prod', ...t.flags], 2, () => /no context named prod/],
    ['an unreachable host', () => [t.name, '--to', target(), ...withFlag(t.flags, '--ssh-port', '1')], 5, () => /cannot connect/],
    ['a version the node cannot install', () => [t.name, '--to', 'containerd=9.9.9-1', ...DRAIN_FLAGS, ...t.flags], 10, () => new RegExp(`not available from ${t.name}'s package sources`)],
    ['nothing to do: no --to and no reboot', () => [t.name, ...t.flags], 2, () => /nothing to do: give --to PACKAGE=VERSION, --pending-upgrades, --reboot or --reboot-if-required/],
    ['--reboot and --reboot-if-required together', () => [t.name, '--reboot', '--reboot-if-required', ...t.flags], 2, () => /--reboot and --reboot-if-required do not go together/],
    ['a sentinel command without --reboot-if-required', () => [t.name, '--reboot', '--reboot-sentinel-command', 'true', ...t.flags], 2, () => /--reboot-sentinel-command needs --reboot-if-required/],
    ['a malformed --reboot-timeout', () => [t.name, '--reboot', '--reboot-timeout', 'soon', ...t.flags], 2, () => /--reboot-timeout/],
  ];

  it.each(cases)('%s', async (_name, args, code, message) => {
    const result = await upgradeNode(args());
    expect(result.code, result.stderr).toBe(code);
    expect(result.stderr + result.stdout).toMatch(message());
    expect(await nodeFingerprint(t)).toEqual(before);
  });

  it('a host key that does not match known_hosts (never accepted blindly)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-maint-'));
    const wrong = join(dir, 'known_hosts');
    // A real key, but not this host's: the bed's own client key, listed for the node's address.
    const [type, key] = readFileSync(`${bed().sshKey}.pub`, 'utf8').split(' ');
    writeFileSync(wrong, `[127.0.0.1]:${t.sshPort} ${type} ${key}\n`);
    const result = await upgradeNode([t.name, '--to', target(), ...withFlag(t.flags, '--known-hosts', wrong)]);
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(/does not match/);
    const unknown = join(dir, 'empty');
    writeFileSync(unknown, '');
    const second = await upgradeNode([t.name, '--to', target(), ...withFlag(t.flags, '--known-hosts', unknown)]);
    expect(second.code).toBe(6);
    expect(second.stderr).toMatch(/is not in .*add its host key first/);
    expect(await nodeFingerprint(t)).toEqual(before);
  });

  it('a version the node cannot install: the report says what is installed and what was asked, text and JSON', async () => {
    const installed = bed().containerd.old;
    const text = await upgradeNode([t.name, '--to', 'containerd=1.6.99~ds1-1', ...DRAIN_FLAGS, ...t.flags]);
    expect(text.code, text.stderr).toBe(10);
    expect(text.stdout).toContain(`  containerd: ${installed}, unchanged (asked for 1.6.99~ds1-1)`);
    const json = await upgradeNode([t.name, '--to', 'containerd=1.6.99~ds1-1', '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
    expect(JSON.parse(json.stdout).versions).toEqual({ before: { containerd: installed }, target: { containerd: '1.6.99~ds1-1' }, after: { containerd: installed } });
    expect(await nodeFingerprint(t)).toEqual(before);
  });

  it('--output json carries the error for machines', async () => {
    const result = await upgradeNode(['no-such-node', '--to', target(), '--output', 'json', ...t.flags]);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({ result: 'error', exitCode: 3, error: { code: 'nodeNotFound' } });
  });
});
