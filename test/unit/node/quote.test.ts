import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { command, isSafeValue, quote } from '../../../src/node/transport/quote.js';

describe('quote', () => {
  const nasty = ["it's", '$(reboot)', '`id`', 'a b', 'x;y', 'new\nline', '', "''", '\\', '*', '-n', 'ä'];
  it.each(nasty)('survives a real shell unchanged: %j', (value) => {
    expect(execFileSync('sh', ['-c', `printf '%s' ${quote(value)}`]).toString()).toBe(value);
  });
  it('leaves plain words alone', () => {
    expect(command('apt-get', 'install', 'containerd=1.6.20~ds1-1+deb12u3')).toBe("apt-get install 'containerd=1.6.20~ds1-1+deb12u3'");
    expect(quote('/var/lib/cni')).toBe('/var/lib/cni');
  });
  it('accepts only metacharacter-free operator values', () => {
    expect(isSafeValue('1.6.20~ds1-1+deb12u3')).toBe(true);
    expect(isSafeValue('a;b')).toBe(false);
    expect(isSafeValue('$(x)')).toBe(false);
  });
});
