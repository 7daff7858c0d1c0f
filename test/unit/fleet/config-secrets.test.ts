import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// The program asks the SDK which config keys are secrets (runtime isConfigSecret, src/fleet/program.ts). This pins
// that contract of the installed @pulumi/pulumi, in a fresh process set up as the nodejs language host sets one up:
// config keys in PULUMI_CONFIG in their old <ns>:config:<name> form, secret keys in PULUMI_CONFIG_SECRET_KEYS as <ns>:<name>.
const SCRIPT = `
import * as pulumi from '@pulumi/pulumi';
const raw = pulumi.runtime.allConfig();
console.log(JSON.stringify({ keys: Object.keys(raw).sort(), secret: Object.keys(raw).filter(pulumi.runtime.isConfigSecret) }));
`;

function secretKeysAsTheProgramSees(env: Record<string, string>): { keys: string[]; secret: string[] } {
  return JSON.parse(execFileSync('node', ['--input-type=module', '-e', SCRIPT], { env: { ...process.env, ...env }, encoding: 'utf8' }));
}

describe('secret config keys, as the Pulumi SDK tells them', () => {
  it('lists node-maint:sshKey when it was set with --secret', () => {
    const seen = secretKeysAsTheProgramSees({
      PULUMI_CONFIG: JSON.stringify({ 'node-maint:config:sshKey': 'key', 'node-maint:config:nodes': '["a"]' }),
      PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(['node-maint:sshKey']),
    });
    expect(seen).toEqual({ keys: ['node-maint:nodes', 'node-maint:sshKey'], secret: ['node-maint:sshKey'] });
  });

  it('lists nothing when it was set in plain text', () => {
    const seen = secretKeysAsTheProgramSees({ PULUMI_CONFIG: JSON.stringify({ 'node-maint:config:sshKey': 'key' }), PULUMI_CONFIG_SECRET_KEYS: '[]' });
    expect(seen).toEqual({ keys: ['node-maint:sshKey'], secret: [] });
  });
});
