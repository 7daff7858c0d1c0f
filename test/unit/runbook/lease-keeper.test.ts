import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import type { Lease } from '../../../src/cluster/types.js';
import { RunbookError } from '../../../src/errors.js';
import { LeaseKeeper } from '../../../src/runbook/lease-keeper.js';

// The API seam only: one Lease kept in memory with resourceVersions, as the apiserver keeps it (a PUT must carry the
// resourceVersion it read, or it gets 409), and a switch that makes every call fail as an unreachable API does.
function fakeApi() {
  let stored: Lease | undefined;
  let rv = 0;
  const api = {
    down: false,
    /** Runs as a write reaches the API, before it is stored. */
    onWrite: undefined as (() => void) | undefined,
    steal(holder: string) {
      stored = { ...stored!, metadata: { ...stored!.metadata, resourceVersion: String(++rv) }, spec: { ...stored!.spec, holderIdentity: holder } };
    },
    holder: () => stored?.spec.holderIdentity,
    cluster: {
      async get() {
        if (api.down) throw new RunbookError('unreachable', 'the Kubernetes API did not answer');
        if (!stored) throw new ApiError(404, 'NotFound', 'not found');
        return structuredClone(stored);
      },
      async request(method: string, _path: string, body: Lease) {
        if (api.down) throw new RunbookError('unreachable', 'the Kubernetes API did not answer');
        api.onWrite?.();
        if (method === 'PUT' && body.metadata.resourceVersion !== stored?.metadata.resourceVersion) throw new ApiError(409, 'Conflict', 'the object has been modified');
        stored = { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
        return structuredClone(stored);
      },
      withHooks() {
        return this;
      },
    },
  };
  return api;
}

const keeperOn = (api: ReturnType<typeof fakeApi>, lines: string[] = [], stop?: AbortSignal) =>
  new LeaseKeeper(api.cluster as unknown as Cluster, {
    onLine: (line) => lines.push(line),
    stop,
    namespace: 'kube-system',
    node: 'n',
    holder: 'node-maint/here/1/1',
    durationSeconds: 1.5,
    renewDeadlineSeconds: 0.6,
    retryPeriodSeconds: 0.2,
    outageToleranceSeconds: 3,
  });

describe('the LeaseKeeper fence', () => {
  it('lets changes through while renewed; past the renew deadline it holds them, until a conditional renewal succeeds', async () => {
    const api = fakeApi();
    const keeper = keeperOn(api);
    await keeper.acquire();
    await keeper.fence();
    api.down = true;
    await sleep(800);
    let passed = false;
    const waiting = keeper.fence().then(() => (passed = true));
    await sleep(500);
    expect(passed).toBe(false);
    api.down = false;
    await waiting;
    expect(passed).toBe(true);
    await keeper.release();
    expect(api.holder()).toBeNull();
  });

  it('stops every change for good once someone else wrote the Lease', async () => {
    const api = fakeApi();
    const lines: string[] = [];
    const keeper = keeperOn(api, lines);
    await keeper.acquire();
    api.steal('node-maint/elsewhere/7/7');
    await sleep(500);
    // Said once, the moment a renewal finds it, not only when the next change asks.
    expect(lines).toEqual(['the Lease was taken by node-maint/elsewhere/7/7: no further change to the node']);
    await expect(keeper.fence()).rejects.toMatchObject({ code: 'leaseLost' });
    expect(keeper.isLost).toBe(true);
    await keeper.release();
    expect(api.holder()).toBe('node-maint/elsewhere/7/7');
  });

  it('gives up after the outage tolerance: leaseLost, not a change made blind', async () => {
    const api = fakeApi();
    const keeper = keeperOn(api);
    await keeper.acquire();
    api.down = true;
    await sleep(800);
    await expect(keeper.fence()).rejects.toThrow(/could not be renewed for 3s; this run stopped changing the node/);
    api.down = false;
    await keeper.release();
  });
});

describe('releasing the Lease', () => {
  it('frees it even when a journal write was queued just before (its resourceVersion is the one to send)', async () => {
    const api = fakeApi();
    const keeper = keeperOn(api);
    await keeper.acquire();
    const journal = { runId: 'r', steps: {} } as never;
    const writing = keeper.save(journal);
    await keeper.release();
    await writing;
    expect(api.holder()).toBeNull();
  });

  it('gives up a Lease whose take was under way when the stop came, so that no process that ended holds the node', async () => {
    const api = fakeApi();
    const stop = new AbortController();
    // The stop lands while the take's write is with the API: the write is stored, its answer comes after the stop.
    api.onWrite = () => {
      api.onWrite = undefined;
      stop.abort('SIGINT');
    };
    await expect(keeperOn(api, [], stop.signal).acquire()).rejects.toMatchObject({ code: 'stopped' });
    expect(api.holder()).toBeNull();
  });
});
