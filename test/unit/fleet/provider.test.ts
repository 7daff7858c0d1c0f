import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeUpgradeProvider } from '../../../src/fleet/provider.js';

/** A stand-in for the library the provider loads: the holds it is given; what it was asked to do, in order. */
function fakeLibrary(holds: string[], ended: Record<string, unknown> = { exitCode: 0, result: 'upgraded' }, gates: { before?: string; after?: string } = {}): { url: string; upgraded: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'node-maint-provider-'));
  const key = `__upgraded_${dir.replace(/\W/g, '_')}`;
  const g = globalThis as unknown as Record<string, string[]>;
  g[key] = [];
  writeFileSync(
    join(dir, 'lib.mjs'),
    `export const fleetHolds = async () => ${JSON.stringify(holds)};
     export const upgradeFleetNode = async (inputs) => (globalThis[${JSON.stringify(key)}].push(inputs.node), { runId: 'r', versions: { before: {}, after: {} }, steps: [], rollback: [], durationMs: 1, ...${JSON.stringify(ended)} });
     export const SKIPPED_RESULT = 'skipped-undrainable';
     export const undrainableReason = (r) => (r.exitCode === 8 ? r.error.message : undefined);
     export const markSkipped = async (inputs, runId, reason) => globalThis[${JSON.stringify(key)}].push(\`marked \${inputs.node} \${runId}: \${reason}\`);
     const calls = globalThis[${JSON.stringify(key)}];
     export const beforeFleetNode = async (inputs) => { calls.push('before ' + inputs.node); if (${JSON.stringify(gates.before ?? '')}) throw new Error(${JSON.stringify(gates.before ?? '')}); return { schedulable: true, workloads: [] }; };
     export const afterFleetNode = async (inputs, before) => { calls.push('after ' + inputs.node + ' ' + before.schedulable); if (${JSON.stringify(gates.after ?? '')}) throw new Error(${JSON.stringify(gates.after ?? '')}); };
     export const notifyNodeEnd = async (webhook, inputs, outcome) => { calls.push('notify ' + (webhook ?? 'none') + ' ' + outcome.result + (outcome.error ? ': ' + outcome.error : '')); };`,
  );
  return { url: pathToFileURL(join(dir, 'lib.mjs')).href, upgraded: () => g[key]! };
}

const inputs = { node: 'n', targets: { containerd: '2' }, leaseNamespace: 'kube-system', maintenanceWindow: { schedule: '0 22 * * 6', durationMinutes: 240, timeZone: 'UTC' } } as never;

describe('the NodeRuntimeUpgrade dynamic provider', () => {
  it('serializes for the provider process: captures the library URL, not clients and not the SSH key', () => {
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-material\n-----END OPENSSH PRIVATE KEY-----';
    const out = execFileSync('node', ['test/unit/fleet/serialize-check.mjs'], { env: { ...process.env, TEST_KEY: key }, encoding: 'utf8' });
    const resource = (JSON.parse(out) as Array<{ type: string; inputs: Record<string, unknown> }>).find((c) => c.type === 'pulumi-nodejs:dynamic/node-maint:NodeRuntimeUpgrade')!;
    expect(typeof resource.inputs.__provider).toBe('string');
    expect(resource.inputs.__provider as string).toContain('fleet/apply.js');
    expect(resource.inputs.__provider as string).toContain('fleetHolds');
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

  it('diff: a window, a pause or an order set after a node is done is no change', async () => {
    const p = nodeUpgradeProvider('file:///nowhere.js');
    const olds = { node: 'n', targets: { containerd: '2' }, leaseNamespace: 'kube-system', versionsAfter: { containerd: '2' } } as never;
    const news = { node: 'n', targets: { containerd: '2' }, leaseNamespace: 'kube-system', observed: { containerd: '2' }, maintenanceWindow: { schedule: '0 22 * * 6', durationMinutes: 240, timeZone: 'UTC' } } as never;
    expect((await p.diff!('n', olds, news)).changes).toBe(false);
  });

  it('a node held by the window or a pause fails before its upgrade starts, with every reason', async () => {
    const lib = fakeLibrary(['outside the maintenance window', 'paused by ConfigMap kube-system/node-maint-pause']);
    const p = nodeUpgradeProvider(lib.url);
    await expect(p.create!(inputs)).rejects.toThrow('n: not started: outside the maintenance window; paused by ConfigMap kube-system/node-maint-pause');
    await expect(p.update!('n', inputs, inputs)).rejects.toThrow(/^n: not started: /);
    expect(lib.upgraded().filter((c) => !c.startsWith('notify'))).toEqual([]);
    expect(lib.upgraded()[0]).toMatch(/^notify none not-started: n: not started: outside/);
  });

  it('a node not held is upgraded between its gates, and its end is told to the webhook', async () => {
    const lib = fakeLibrary([]);
    const out = await nodeUpgradeProvider(lib.url).create!({ ...(inputs as object), webhook: 'http://127.0.0.1:1/hook' } as never);
    expect(out.outs).toMatchObject({ node: 'n', result: 'upgraded' });
    expect(lib.upgraded()).toEqual(['before n', 'n', 'after n true', 'notify http://127.0.0.1:1/hook upgraded']);
  });

  it('a gate before the node (alerts) stops it unstarted; a gate after it (workloads) stops the fleet with the node done', async () => {
    const held = fakeLibrary([], undefined, { before: 'n: not started, the fleet stops here: held by firing alert(s): NodeDown' });
    await expect(nodeUpgradeProvider(held.url).create!(inputs)).rejects.toThrow('held by firing alert(s): NodeDown');
    expect(held.upgraded()).toEqual(['before n', 'notify none not-started: n: not started, the fleet stops here: held by firing alert(s): NodeDown']);
    const slow = fakeLibrary([], undefined, { after: 'n: upgraded, but the fleet stops here: demo/web 1/2' });
    await expect(nodeUpgradeProvider(slow.url).create!(inputs)).rejects.toThrow('demo/web 1/2');
    expect(slow.upgraded()).toEqual(['before n', 'n', 'after n true', 'notify none gate-failed: n: upgraded, but the fleet stops here: demo/web 1/2']);
  });

  it('an undrainable node fails the fleet by default; with undrainable: skip it is marked and passed by', async () => {
    const blocked = { exitCode: 8, result: 'failed', error: { message: 'budget ledger allows no eviction' } };
    await expect(nodeUpgradeProvider(fakeLibrary([], blocked).url).create!(inputs)).rejects.toThrow('n: failed (exit 8): budget ledger allows no eviction');
    const lib = fakeLibrary([], blocked);
    const out = await nodeUpgradeProvider(lib.url).create!({ ...(inputs as object), undrainable: 'skip' } as never);
    expect(out.outs).toMatchObject({ result: 'skipped-undrainable', skipped: 'budget ledger allows no eviction' });
    expect(lib.upgraded()).toEqual(['before n', 'n', 'marked n r: budget ledger allows no eviction', 'after n true', 'notify none skipped-undrainable: budget ledger allows no eviction']);
    // Any other failure still stops the fleet.
    const broken = fakeLibrary([], { exitCode: 12, result: 'rollback-failed', error: { message: 'kubelet did not start' } });
    await expect(nodeUpgradeProvider(broken.url).create!({ ...(inputs as object), undrainable: 'skip' } as never)).rejects.toThrow('n: rollback-failed (exit 12)');
  });

  it('check refuses inputs without a node or targets', async () => {
    const p = nodeUpgradeProvider('file:///nowhere.js');
    expect((await p.check!({} as never, { node: '', targets: {} } as never)).failures).toHaveLength(2);
  });
});
