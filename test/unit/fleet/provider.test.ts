import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { nodeUpgradeProvider } from '../../../src/fleet/provider.js';

describe('the NodeRuntimeUpgrade dynamic provider', () => {
  it('serializes for the provider process: captures the library URL, not clients and not the SSH key', () => {
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-material\n-----END OPENSSH PRIVATE KEY-----';
    const out = execFileSync('node', ['test/unit/fleet/serialize-check.mjs'], { env: { ...process.env, TEST_KEY: key }, encoding: 'utf8' });
    const resource = (JSON.parse(out) as Array<{ type: string; inputs: Record<string, unknown> }>).find((c) => c.type === 'pulumi-nodejs:dynamic/node-maint:NodeRuntimeUpgrade')!;
    expect(typeof resource.inputs.__provider).toBe('string');
    expect(resource.inputs.__provider as string).toContain('fleet/apply.js');
    expect(resource.inputs.__provider as string).not.toContain('secret-material');
  });

  it('diff: no change when the node is already at the targets; a change when it drifted or targets moved', async () => {
    const p = nodeUpgradeProvider('file:///nowhere.js');
    const olds = { node: 'n', targets: { containerd: '2' }, versionsAfter: { containerd: '2' } } as never;
    expect((await p.diff!('n', olds, { node: 'n', targets: { containerd: '2' }, observed: { containerd: '2' } } as never)).changes).toBe(false);
    expect((await p.diff!('n', olds, { node: 'n', targets: { containerd: '2' }, observed: { containerd: '1' } } as never)).changes).toBe(true);
    expect((await p.diff!('n', olds, { node: 'n', targets: { containerd: '3' } } as never)).changes).toBe(true);
    expect((await p.diff!('n', olds, { node: 'm', targets: { containerd: '2' } } as never)).replaces).toEqual(['node']);
  });

  it('check refuses inputs without a node or targets', async () => {
    const p = nodeUpgradeProvider('file:///nowhere.js');
    expect((await p.check!({} as never, { node: '', targets: {} } as never)).failures).toHaveLength(2);
  });
});
