import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { listAll } from '../../../src/cluster/list.js';
import { slimPod } from '../../../src/cluster/pods.js';

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

describe('a cluster-wide list kept slim', () => {
  it('trims each item as its page arrives', async () => {
    const { cluster } = pagedCluster(1_001);
    expect(await listAll<number, string>(cluster, '/api/v1/pods', 500, (n) => `#${n}`)).toEqual(Array.from({ length: 1_001 }, (_, i) => `#${i}`));
  });
  it('keeps of a pod what the cluster-wide views read, and not its containers', () => {
    const pod = {
      metadata: { name: 'etcd-cp', namespace: 'kube-system', uid: 'u', labels: { component: 'etcd', tier: 'control-plane' }, annotations: { 'kubernetes.io/config.mirror': 'h', big: 'x'.repeat(1_000) }, managedFields: [{}] },
      spec: { nodeName: 'cp', hostNetwork: true, containers: [{ name: 'etcd', image: 'etcd' }] },
      status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }], containerStatuses: [{ name: 'etcd' }] },
    } as never;
    const slim = slimPod(pod);
    expect(slim).toEqual({
      metadata: { name: 'etcd-cp', namespace: 'kube-system', uid: 'u', deletionTimestamp: undefined, ownerReferences: undefined, labels: { component: 'etcd' }, annotations: { 'kubernetes.io/config.mirror': 'h' } },
      spec: { nodeName: 'cp', hostNetwork: true },
      status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }] },
    });
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(pod).length / 4);
  });
});
