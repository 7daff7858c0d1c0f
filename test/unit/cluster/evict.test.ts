import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { evictPod } from '../../../src/cluster/drain/evict.js';
import type { Pod } from '../../../src/cluster/types.js';

// The API seam only: answers scripted per call, as the apiserver gives them. The real 409 of a replaced pod is in
// test/integration/45-faults-preflight.test.ts.
function fakeApi(evictions: Array<number | 'ok'>, podUid: string | null) {
  const calls: string[] = [];
  const cluster = {
    async request(method: string, path: string) {
      calls.push(`${method} ${path}`);
      const next = evictions.shift() ?? 'ok';
      if (next !== 'ok') throw new ApiError(next, next === 409 ? 'Conflict' : 'TooManyRequests', `${method} ${path}: ${next}`);
      return {};
    },
    async get(path: string) {
      calls.push(`GET ${path}`);
      if (podUid === null) throw new ApiError(404, 'NotFound', 'not found');
      return { metadata: { name: 'web-1', namespace: 'ns', uid: podUid } };
    },
  };
  return { cluster: cluster as unknown as Cluster, calls };
}

const pod: Pod = { metadata: { name: 'web-1', namespace: 'ns', uid: 'uid-a' }, spec: {} };
const options = { gracePeriodSeconds: 5, deadline: Date.now() + 10_000, version: 'policy/v1' as const, retryDelayMs: 10, maxRetryDelayMs: 20 };

describe('evictPod and 409', () => {
  it('a conflict (the budget was being updated) while the pod is still there is retried until the eviction goes through', async () => {
    const { cluster, calls } = fakeApi([409, 409, 'ok'], 'uid-a');
    await evictPod(cluster, pod, options);
    expect(calls.filter((c) => c.startsWith('POST'))).toHaveLength(3);
  });
  it('a 409 for a pod replaced by a namesake (another UID) means the pod meant is gone: no more evictions', async () => {
    const { cluster, calls } = fakeApi([409], 'uid-b');
    await evictPod(cluster, pod, options);
    expect(calls).toEqual(['POST /api/v1/namespaces/ns/pods/web-1/eviction', 'GET /api/v1/namespaces/ns/pods/web-1']);
  });
  it('a 409 for a pod already gone is done too', async () => {
    const { cluster } = fakeApi([409], null);
    await expect(evictPod(cluster, pod, options)).resolves.toBeUndefined();
  });
  it('a budget that keeps refusing runs into the deadline with kubectl\'s message', async () => {
    const { cluster } = fakeApi(Array(1000).fill(429), 'uid-a');
    await expect(evictPod(cluster, pod, { ...options, deadline: Date.now() + 200 })).rejects.toThrow(/error when evicting pods\/web-1 -n ns: global timeout reached/);
  });
});
