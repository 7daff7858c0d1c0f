import { afterEach, describe, expect, it, vi } from 'vitest';
import { NODE_NOW_READ_MS, readNodeNow } from '../../../src/runbook/stopped.js';

// What a stop reads of the node, as the run ends: a node that stops answering (a host in its firmware's POST) does
// not hold the stop up past NODE_NOW_READ_MS; what did not answer is said, what did is kept (issue 36 item 6).
describe('the node as a run stops', () => {
  afterEach(() => vi.useRealTimers());

  it('reads side by side for 10 s at most: a silent node is said as silent, the API that answered is kept', async () => {
    vi.useFakeTimers();
    const silent = () => new Promise<never>(() => undefined);
    const ctx = {
      options: { node: 'n1' },
      journal: { runId: 'r1', targets: { containerd: '2' }, steps: {}, prior: undefined },
      recordingCluster: { server: 'https://api', get: async () => ({ spec: { unschedulable: true } }) },
      reader: { target: 'ssh n1', exec: silent, close: async () => undefined },
      installedVersions: silent,
    };
    let done = false;
    const now = readNodeNow(ctx as never).finally(() => (done = true));
    await vi.advanceTimersByTimeAsync(NODE_NOW_READ_MS - 1);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await now).toEqual({
      running: [],
      cordoned: true,
      unread: "could not read the units (no answer within 10s), the packages (no answer within 10s), the run's commands (no answer within 10s)",
    });
  });

  it('says why a read failed when it failed at once, and waits for nothing more; a unit not answered for is unknown', async () => {
    const ctx = {
      options: { node: 'n1' },
      journal: { runId: 'r1', targets: {}, steps: {}, prior: undefined },
      recordingCluster: { server: 'https://api', get: async () => Promise.reject(new Error('connection refused')) },
      reader: { target: 'ssh n1', exec: async () => ({ code: 0, stdout: '100\n', stderr: '' }), close: async () => undefined },
      installedVersions: async () => ({}),
    };
    const t0 = Date.now();
    const now = await readNodeNow(ctx as never);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(now.unread).toBe('could not read the Node (connection refused)');
    // '100' is no answer of systemd's: never read as "stopped".
    expect(now.kubelet).toBe('unknown');
  });

  it('says "starting" of a kubelet whose start the boot queued (is-active says inactive), not "stopped"', async () => {
    const ctx = {
      options: { node: 'n1' },
      journal: { runId: 'r1', targets: {}, steps: {}, prior: undefined },
      recordingCluster: { server: 'https://api', get: async () => ({ spec: { unschedulable: true } }) },
      reader: { target: 'ssh n1', exec: async () => ({ code: 0, stdout: 'kubelet inactive 205\n', stderr: '' }), close: async () => undefined },
      installedVersions: async () => ({}),
    };
    expect((await readNodeNow(ctx as never)).kubelet).toBe('starting');
  });
});
