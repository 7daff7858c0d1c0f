import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { listAll } from '../../../src/cluster/list.js';

/** A list served in pages of `limit`, continue tokens as offsets; `expireAt` answers 410 Gone once for that token. */
function pagedCluster(total: number, expireAt?: string) {
  const asked: string[] = [];
  let expired = false;
  const cluster = {
    get: async (path: string) => {
      asked.push(path);
      const url = new URL(path, 'http://x');
      const limit = Number(url.searchParams.get('limit'));
      const from = Number(url.searchParams.get('continue') ?? 0);
      if (expireAt !== undefined && url.searchParams.get('continue') === expireAt && !expired) {
        expired = true;
        throw new ApiError(410, 'Expired', 'The provided continue parameter is too old');
      }
      const items = Array.from({ length: Math.max(0, Math.min(limit, total - from)) }, (_, i) => from + i);
      return { metadata: { continue: from + limit < total ? String(from + limit) : undefined }, items };
    },
  } as unknown as Cluster;
  return { cluster, asked };
}

describe('listing in pages (limit/continue)', () => {
  it('reads every page and keeps the caller\'s query', async () => {
    const { cluster, asked } = pagedCluster(1_201);
    const items = await listAll<number>(cluster, '/api/v1/pods?fieldSelector=spec.nodeName%3Dn', 500);
    expect(items).toHaveLength(1_201);
    expect(items[1_200]).toBe(1_200);
    expect(asked).toEqual(['/api/v1/pods?fieldSelector=spec.nodeName%3Dn&limit=500', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn&limit=500&continue=500', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn&limit=500&continue=1000']);
  });

  it('starts again once when a continue token expired (410), and never mixes the two reads', async () => {
    const { cluster, asked } = pagedCluster(700, '500');
    expect(await listAll<number>(cluster, '/api/v1/pods', 500)).toEqual(Array.from({ length: 700 }, (_, i) => i));
    expect(asked).toHaveLength(4);
  });

  it('any other failure is the caller\'s', async () => {
    const cluster = { get: async () => Promise.reject(new ApiError(403, 'Forbidden', 'pods is forbidden')) } as unknown as Cluster;
    await expect(listAll(cluster, '/api/v1/pods')).rejects.toMatchObject({ status: 403 });
  });
});
