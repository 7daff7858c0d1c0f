import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { holdsAt } from '../../../src/fleet/hold.js';
import { pauseHold, readPause } from '../../../src/fleet/pause.js';

// The API seam only: one scripted answer for the pause ConfigMap's GET.
function fakeApi(answer: number | { data?: Record<string, string> }) {
  const calls: string[] = [];
  const cluster = {
    async get(path: string) {
      calls.push(`GET ${path}`);
      if (typeof answer === 'number') throw new ApiError(answer, answer === 404 ? 'NotFound' : 'Forbidden', `GET ${path}: ${answer}`);
      return { metadata: { name: 'node-maint-pause', namespace: 'maint' }, ...answer };
    },
  };
  return { cluster: cluster as unknown as Cluster, calls };
}

describe('the pause ConfigMap', () => {
  it('names the ConfigMap, its reason and how to go on', () => {
    expect(pauseHold('maint', { metadata: { name: 'node-maint-pause' }, data: { reason: 'incident 4711 ' } })).toBe(
      'paused by ConfigMap maint/node-maint-pause (reason: incident 4711); remove it (`kubectl -n maint delete configmap node-maint-pause`) and run `pulumi up` again to continue where it stopped',
    );
    expect(pauseHold('maint', { metadata: { name: 'node-maint-pause' } })).toMatch(/^paused by ConfigMap maint\/node-maint-pause; remove it/);
    expect(pauseHold('maint', undefined)).toBeUndefined();
  });

  it('is read with one GET in the given namespace; absent is no pause', async () => {
    const { cluster, calls } = fakeApi(404);
    expect(await readPause(cluster, 'maint')).toBeUndefined();
    expect(calls).toEqual(['GET /api/v1/namespaces/maint/configmaps/node-maint-pause']);
    expect(await readPause(fakeApi({ data: { reason: 'x' } }).cluster, 'maint')).toMatchObject({ data: { reason: 'x' } });
  });

  it('an API that will not say is not taken for "no pause"', async () => {
    await expect(readPause(fakeApi(403).cluster, 'maint')).rejects.toThrow(/403/);
  });
});

describe('holds before a node starts', () => {
  const window = { schedule: '0 22 * * 6', durationMinutes: 240, timeZone: 'UTC' };
  const saturdayNight = new Date('2025-01-11T23:00:00Z');
  const wednesday = new Date('2025-01-08T12:00:00Z');

  it('none inside the window and without a pause, or without a window', async () => {
    expect(await holdsAt({ cluster: fakeApi(404).cluster, leaseNamespace: 'maint', maintenanceWindow: window, now: saturdayNight })).toEqual([]);
    expect(await holdsAt({ cluster: fakeApi(404).cluster, leaseNamespace: 'maint', now: wednesday })).toEqual([]);
  });

  it('outside the window, paused, or both', async () => {
    const outside = await holdsAt({ cluster: fakeApi(404).cluster, leaseNamespace: 'maint', maintenanceWindow: window, now: wednesday });
    expect(outside).toEqual([expect.stringMatching(/^outside the maintenance window .* opens next at 2025-01-11T22:00:00.000Z/)]);
    const both = await holdsAt({ cluster: fakeApi({ data: { reason: 'freeze' } }).cluster, leaseNamespace: 'maint', maintenanceWindow: window, now: wednesday });
    expect(both).toEqual([outside[0], expect.stringMatching(/^paused by ConfigMap maint\/node-maint-pause \(reason: freeze\)/)]);
  });
});
