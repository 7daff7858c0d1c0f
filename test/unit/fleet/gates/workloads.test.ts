import { describe, expect, it } from 'vitest';
import { notBack, statusOf, targetsOf, workloadName, workloadsOf, type WorkloadStatus } from '../../../../src/fleet/gates/workloads.js';
import type { Pod } from '../../../../src/cluster/types.js';

const pod = (name: string, owner?: { kind: string; name: string }, phase = 'Running'): Pod => ({
  metadata: { name, namespace: 'demo', ...(owner ? { ownerReferences: [{ ...owner, uid: `u-${owner.name}`, controller: true, apiVersion: 'apps/v1' }] } : {}) },
  spec: { nodeName: 'n1' },
  status: { phase },
});

describe('the workloads that had pods on a node', () => {
  it('resolve ReplicaSets to their Deployments, keep StatefulSets and DaemonSets, and count each once', () => {
    const pods = [
      pod('web-1', { kind: 'ReplicaSet', name: 'web-5d8f' }),
      pod('web-2', { kind: 'ReplicaSet', name: 'web-5d8f' }),
      pod('db-0', { kind: 'StatefulSet', name: 'db' }),
      pod('agent-x', { kind: 'DaemonSet', name: 'node-agent' }),
      pod('lone-rs-1', { kind: 'ReplicaSet', name: 'lone-rs' }),
      pod('bare'),
      pod('job-1', { kind: 'Job', name: 'backup' }),
      pod('done-1', { kind: 'ReplicaSet', name: 'web-5d8f' }, 'Succeeded'),
    ];
    const owners = new Map([['demo/web-5d8f', 'web'], ['demo/lone-rs', undefined]]);
    expect(workloadsOf(pods, owners).map(workloadName)).toEqual(['DaemonSet demo/node-agent', 'Deployment demo/web', 'ReplicaSet demo/lone-rs', 'StatefulSet demo/db']);
  });

  it('read desired and available as each controller reports them, and whether it saw the latest spec', () => {
    const ref = { namespace: 'demo', name: 'x' };
    expect(statusOf({ kind: 'Deployment', ...ref }, { metadata: { name: 'x', generation: 3 }, spec: { replicas: 4 }, status: { observedGeneration: 3, availableReplicas: 2 } })).toMatchObject({ desired: 4, available: 2, observed: true });
    expect(statusOf({ kind: 'StatefulSet', ...ref }, { metadata: { name: 'x', generation: 2 }, spec: { replicas: 3 }, status: { observedGeneration: 1, availableReplicas: 3 } })).toMatchObject({ desired: 3, available: 3, observed: false });
    expect(statusOf({ kind: 'DaemonSet', ...ref }, { metadata: { name: 'x' }, status: { desiredNumberScheduled: 5, numberAvailable: 4 } })).toMatchObject({ desired: 5, available: 4, observed: true });
    // A Deployment without replicas wants one, as the API defaults it.
    expect(statusOf({ kind: 'Deployment', ...ref }, { metadata: { name: 'x' } })).toMatchObject({ desired: 1, available: 0 });
  });
});

describe('whether they are back', () => {
  const status = (name: string, desired: number, available: number, observed = true): WorkloadStatus => ({ kind: 'Deployment', namespace: 'demo', name, desired, available, observed });

  it('needs every workload at its desired count, or where it stood before when it was short then', () => {
    const targets = targetsOf([status('web', 4, 4), status('short', 3, 2)]);
    const now = (web: number, short: number) => new Map([['Deployment demo/web', status('web', 4, web)], ['Deployment demo/short', status('short', 3, short)]]);
    expect(notBack(targets, now(3, 2))).toEqual(['Deployment demo/web 3/4 available']);
    expect(notBack(targets, now(4, 1))).toEqual(['Deployment demo/short 1/3 available (needs 2, as before the node)']);
    expect(notBack(targets, now(4, 2))).toEqual([]);
  });

  it('waits for a controller that has not seen the latest spec; a deleted or scaled-down workload does not hold', () => {
    const targets = targetsOf([status('web', 4, 4), status('gone', 2, 2), status('scaled', 5, 5)]);
    const now = new Map<string, WorkloadStatus | undefined>([
      ['Deployment demo/web', status('web', 4, 4, false)],
      ['Deployment demo/gone', undefined],
      ['Deployment demo/scaled', status('scaled', 2, 2)],
    ]);
    expect(notBack(targets, now)).toEqual(['Deployment demo/web 4/4 available, spec not yet observed']);
  });
});
