import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { knownKeysFor } from '../../../src/node/transport/known-hosts.js';

const KEY_A = 'AAAAC3NzaC1lZDI1NTE5AAAAIGq1yCqWb0JvxZQ1Rmz0yK5JcSLsUxyKxSmP9VbN0CzR';
const KEY_B = 'AAAAC3NzaC1lZDI1NTE5AAAAIJ3f1p1wV1kq5mC0d9gT0Zr6iAfW3JrCwbOqg1b2a3xY';

function hashed(name: string): string {
  const salt = Buffer.from('0123456789abcdefghij');
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

describe('knownKeysFor', () => {
  it('finds [host]:port entries and plain port-22 entries', () => {
    const file = `[127.0.0.1]:2222 ssh-ed25519 ${KEY_A}\nnode1,10.0.0.5 ssh-ed25519 ${KEY_B}\n`;
    expect(knownKeysFor(file, '127.0.0.1', 2222).map((k) => k.key.toString('base64'))).toEqual([KEY_A]);
    expect(knownKeysFor(file, '10.0.0.5', 22).map((k) => k.key.toString('base64'))).toEqual([KEY_B]);
    expect(knownKeysFor(file, '127.0.0.1', 22)).toEqual([]);
  });
  it('matches hashed host names', () => {
    const file = `${hashed('[10.1.2.3]:2200')} ssh-ed25519 ${KEY_A}\n`;
    expect(knownKeysFor(file, '10.1.2.3', 2200)).toHaveLength(1);
    expect(knownKeysFor(file, '10.1.2.4', 2200)).toHaveLength(0);
  });
  it('honours wildcards and negations, skips comments and markers', () => {
    const file = `# comment\n@revoked * ssh-ed25519 ${KEY_B}\n*.prod,!db.prod ssh-ed25519 ${KEY_A}\n`;
    expect(knownKeysFor(file, 'web.prod', 22)).toHaveLength(1);
    expect(knownKeysFor(file, 'db.prod', 22)).toHaveLength(0);
  });
});
