import { describe, expect, it } from 'vitest';
import { matchesHost, parseKnownHosts } from '../../../src/node/transport/known-hosts.js';
import { ED_A, ED_B, HASHED_10_1_2_3_2200, HASHED_NODE7 } from './host-key-fixtures.js';

describe('parseKnownHosts', () => {
  it('reads markers only as the first field, and drops comments, unknown markers and malformed lines', () => {
    const file = [
      '# a comment',
      '',
      `@revoked * ${ED_B} stolen`,
      `@cert-authority *.prod ${ED_A}`,
      `@trusted node-1 ${ED_A}`, // not a marker ssh knows: the line is ignored
      `node-1 @revoked ${ED_A}`, // a marker past the first field is no marker: malformed line
      `node-1 ssh-rsa ${ED_A.split(' ')[1]}`, // the blob is an ed25519 key, not the type the line names
      'node-1 ssh-ed25519 not*base64',
      `  node-1,10.0.0.5 ${ED_A} root@node-1\r`,
    ].join('\n');
    expect(parseKnownHosts(file).map(({ line, marker, patterns, keyType }) => ({ line, marker, patterns, keyType }))).toEqual([
      { line: 3, marker: '@revoked', patterns: '*', keyType: 'ssh-ed25519' },
      { line: 4, marker: '@cert-authority', patterns: '*.prod', keyType: 'ssh-ed25519' },
      { line: 9, marker: undefined, patterns: 'node-1,10.0.0.5', keyType: 'ssh-ed25519' },
    ]);
    expect(parseKnownHosts(file)[2]!.key.toString('base64')).toBe(ED_A.split(' ')[1]);
  });
});

describe('matchesHost', () => {
  it.each([
    // patterns, host, port, matches
    ['node-1,10.0.0.5', '10.0.0.5', 22, true],
    ['node-1,10.0.0.5', '10.0.0.5', 2222, false],
    ['[127.0.0.1]:2222', '127.0.0.1', 2222, true],
    ['[127.0.0.1]:2222', '127.0.0.1', 22, false],
    ['Node-1', 'node-1', 22, true],
    ['node-1', 'NODE-1', 22, true],
    ['*.prod,!db.prod', 'web.prod', 22, true],
    ['*.prod,!db.prod', 'db.prod', 22, false],
    ['!db.prod', 'web.prod', 22, false],
    ['node-?', 'node-7', 22, true],
    ['node-?', 'node-17', 22, false],
    ['10.0.0.*', '10.0.0.99', 22, true],
    ['10.0.0.*', '10.0.1.9', 22, false],
    [HASHED_NODE7, 'node-7.prod', 22, true],
    [HASHED_NODE7, 'node-8.prod', 22, false],
    [HASHED_10_1_2_3_2200, '10.1.2.3', 2200, true],
    [HASHED_10_1_2_3_2200, '10.1.2.3', 22, false],
  ])('%s for %s:%i: %s', (patterns, host, port, matches) => {
    expect(matchesHost(patterns, host, port)).toBe(matches);
  });
});
