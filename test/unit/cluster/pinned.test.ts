import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../../../src/cluster/api.js';
import { comesBackByScheduler, pinningControllers } from '../../../src/cluster/drain/pinned.js';
import type { Pod } from '../../../src/cluster/types.js';
import { loopbackApi } from './loopback-api.js';

const pod = (name: string, owner: { kind: string; name: string } | undefined, spec: Partial<Pod['spec']> = {}): Pod => ({
  metadata: { name, namespace: 'a', ownerReferences: owner ? [{ ...owner, uid: 'u', controller: true, apiVersion: 'apps/v1' }] : undefined },
  spec: { nodeName: 'n1', ...spec },
});

// An apiserver that knows three controllers: a Deployment's ReplicaSet with nodeName n1 in its template, a free
// ReplicaSet, and a StatefulSet.
describe('controllers that put evicted pods straight back on the node', () => {
  let server: Server;
  let kubeconfig: string;
  const asked: string[] = [];
  beforeAll(async () => {
    const objects: Record<string, unknown> = {
      '/apis/apps/v1/namespaces/a/replicasets/web-7d': { metadata: { name: 'web-7d', ownerReferences: [{ kind: 'Deployment', name: 'web', controller: true }] }, spec: { template: { spec: { nodeName: 'n1' } } } },
      '/apis/apps/v1/namespaces/a/replicasets/free-1': { metadata: { name: 'free-1' }, spec: { template: { spec: {} } } },
      '/apis/apps/v1/namespaces/a/statefulsets/db': { metadata: { name: 'db' }, spec: { template: { spec: {} } } },
    };
    ({ server, kubeconfig } = await loopbackApi((req, res) => {
      asked.push(req.url ?? '');
      const found = objects[req.url ?? ''];
      res.writeHead(found ? 200 : 404, { 'Content-Type': 'application/json' }).end(JSON.stringify(found ?? { kind: 'Status', code: 404, reason: 'NotFound' }));
    }));
  });
  afterAll(() => server.close());

  it('names a Deployment whose template sets nodeName, and a controller whose pods tolerate the cordon and select only this node; once each', async () => {
    const tolerant = { tolerations: [{ operator: 'Exists' }], nodeSelector: { 'kubernetes.io/hostname': 'n1' } };
    const pods = [
      pod('web-7d-a', { kind: 'ReplicaSet', name: 'web-7d' }), pod('web-7d-b', { kind: 'ReplicaSet', name: 'web-7d' }),
      pod('free-1-a', { kind: 'ReplicaSet', name: 'free-1' }), pod('db-0', { kind: 'StatefulSet', name: 'db' }, tolerant),
      pod('bare', undefined, tolerant), pod('gone-x', { kind: 'ReplicaSet', name: 'gone' }),
    ];
    asked.length = 0;
    expect(await pinningControllers(await Cluster.connect({ kubeconfig }), 'n1', pods)).toEqual([
      'Deployment a/web (template nodeName n1)',
      'StatefulSet a/db (tolerates the cordon and selects only n1)',
    ]);
    expect(asked.filter((u) => u.endsWith('/web-7d'))).toHaveLength(1);
  });

  it('a toleration of another taint, or a selector another node may satisfy, lets the scheduler place it elsewhere', () => {
    expect(comesBackByScheduler(pod('p', undefined, { tolerations: [{ key: 'node-maint.io/pool', operator: 'Exists' }], nodeSelector: { 'kubernetes.io/hostname': 'n1' } }), 'n1')).toBe(false);
    expect(comesBackByScheduler(pod('p', undefined, { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }], nodeSelector: { zone: 'a' } }), 'n1')).toBe(false);
    expect(comesBackByScheduler(pod('p', undefined, { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }], nodeSelector: { 'kubernetes.io/hostname': 'n1' } }), 'n1')).toBe(true);
  });

  it('reads every way a pod can be held to one node: a required node affinity on metadata.name (matchFields) or the hostname label', () => {
    const all = [{ operator: 'Exists' }];
    const affinity = (...terms: object[]) => ({ tolerations: all, affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } }) as Partial<Pod['spec']>;
    const byName = (values: string[]) => ({ matchFields: [{ key: 'metadata.name', operator: 'In', values }] });
    const byHostname = (values: string[]) => ({ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values }] });
    expect(comesBackByScheduler(pod('p', undefined, affinity(byName(['n1']))), 'n1')).toBe(true);
    expect(comesBackByScheduler(pod('p', undefined, affinity(byHostname(['n1']), byName(['n1']))), 'n1')).toBe(true);
    // Another node allowed by a value, or by another term: the scheduler can place it there.
    expect(comesBackByScheduler(pod('p', undefined, affinity(byName(['n1', 'n2']))), 'n1')).toBe(false);
    expect(comesBackByScheduler(pod('p', undefined, affinity(byName(['n1']), byHostname(['n2']))), 'n1')).toBe(false);
    expect(comesBackByScheduler(pod('p', undefined, affinity({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] })), 'n1')).toBe(false);
  });
});
