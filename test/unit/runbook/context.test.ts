import { describe, expect, it } from 'vitest';
import { contextOn } from './context-on.js';
import type { ExecResult, Transport } from '../../../src/node/transport/types.js';

/** A node that answers a state read with its read count as the hostname, and anything else with nothing. */
class CountingNode implements Transport {
  readonly target = 'node-1';
  reads = 0;
  commands = 0;
  async exec(script: string): Promise<ExecResult> {
    if (script.includes('sec end')) return { code: 0, stdout: `@@meta\n|hostname=read-${++this.reads}\n@@end\n`, stderr: '' };
    this.commands++;
    return { code: 0, stdout: 'containerd\t1.7.0\tii \n', stderr: '' };
  }
  async close() {}
}


// State reads cost the node CPU: a fresh read with nothing done on the node since one a moment ago is that one.
describe('the run context\'s state reads', () => {
  it('takes a fresh read back to back from the last one, but reads again after any command or after a second', async () => {
    const node = new CountingNode();
    const ctx = contextOn(node);
    expect((await ctx.nodeState()).hostname).toBe('read-1');
    expect((await ctx.nodeState({ fresh: true })).hostname).toBe('read-1');
    await ctx.transport.exec('systemctl stop kubelet');
    expect((await ctx.nodeState({ fresh: true })).hostname).toBe('read-2');
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await ctx.nodeState({ fresh: true })).hostname).toBe('read-3');
    expect(node.reads).toBe(3);
  });

  it('reads installed versions from dpkg alone, without a state read, and without making the cached state stale', async () => {
    const node = new CountingNode();
    const ctx = contextOn(node);
    await ctx.nodeState();
    expect(await ctx.installedVersions(['containerd', 'runc'])).toEqual({ containerd: '1.7.0', runc: '' });
    expect((await ctx.nodeState({ fresh: true })).hostname).toBe('read-1');
    expect(node.reads).toBe(1);
  });
});
