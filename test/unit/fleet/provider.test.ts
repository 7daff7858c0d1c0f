import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('the NodeRuntimeUpgrade dynamic provider', () => {
  it('serializes small for the provider process: the library URL, not the library, not clients, not the SSH key', () => {
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-material\n-----END OPENSSH PRIVATE KEY-----';
    const out = execFileSync('node', ['test/unit/fleet/serialize-check.mjs'], { env: { ...process.env, TEST_KEY: key }, encoding: 'utf8' });
    const resource = (JSON.parse(out) as Array<{ type: string; inputs: Record<string, unknown> }>).find((c) => c.type === 'pulumi-nodejs:dynamic/node-maint:NodeRuntimeUpgrade')!;
    const text = resource.inputs.__provider as string;
    expect(text).toContain('fleet/node-provider.js');
    expect(text).not.toContain('fleetHolds');
    expect(text).not.toContain('secret-material');
    // Its text goes with every node's inputs (1,000 nodes: 1,000 copies).
    expect(text.length).toBeLessThan(2500);
  });
});
