import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { JOURNAL_ANNOTATION, leaseName, leasePath } from '../../../src/cluster/lease.js';
import type { Lease } from '../../../src/cluster/types.js';
import type { Transport } from '../../../src/node/transport/types.js';
import { newJournal } from '../../../src/runbook/journal.js';
import { DEFAULT_RUN_OPTIONS } from '../../../src/runbook/options.js';
import { runUpgrade } from '../../../src/runbook/runner.js';

// The runner's Lease through the API seam: one Lease in memory, written conditionally as the apiserver does; every
// access review allowed; no Calico or whereabouts group served. The node is never reached (the transport is unused).
function fakeApi(lease: Lease) {
  let stored = lease;
  let rv = 1;
  const path = leasePath('kube-system', leaseName('n'));
  const api = {
    /** Runs once the first read of the Lease was answered (what the run's read-only look saw). */
    afterFirstRead: undefined as ((lease: Lease) => Lease) | undefined,
    holder: () => stored.spec.holderIdentity,
    cluster: {
      user: 'tester',
      async get(at: string) {
        if (at !== path) throw new ApiError(404, 'NotFound', `${at} not found`);
        const seen = structuredClone(stored);
        if (api.afterFirstRead) {
          const changed = api.afterFirstRead(stored);
          stored = { ...changed, metadata: { ...changed.metadata, resourceVersion: String(++rv) } };
        }
        api.afterFirstRead = undefined;
        return seen;
      },
      async request(method: string, at: string, body: Lease) {
        if (at.endsWith('/selfsubjectaccessreviews')) return { status: { allowed: true } };
        const stale = method === 'PUT' && body.metadata.resourceVersion !== stored.metadata.resourceVersion;
        if (stale) throw new ApiError(409, 'Conflict', 'the object has been modified');
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

const TARGETS = { containerd: '1.6.20' };
const withJournal = (lease: Lease, runId: string): Lease => {
  const journal = newJournal(runId, 'n', 'node-maint/gone/1/1', TARGETS);
  return { ...lease, metadata: { ...lease.metadata, annotations: { [JOURNAL_ANNOTATION]: JSON.stringify(journal) } } };
};

describe("the runner's Lease", () => {
  it('a resume whose take finds the journal changed since its first look refuses, and gives the Lease up', async () => {
    const free: Lease = { metadata: { name: leaseName('n'), namespace: 'kube-system', resourceVersion: '1' }, spec: {} };
    const api = fakeApi(withJournal(free, 'run-a'));
    // Another run wrote its own journal between this run's look and its take.
    api.afterFirstRead = (lease) => withJournal(lease, 'run-b');
    const lease = { durationSeconds: 1.5, renewDeadlineSeconds: 0.6, retryPeriodSeconds: 0.2 };
    const options = { ...DEFAULT_RUN_OPTIONS, node: 'n', targets: TARGETS, lease };
    const cluster = api.cluster as unknown as Cluster;
    await expect(runUpgrade({ options, cluster, transport: {} as Transport })).rejects.toThrow(
      'another run changed the journal of n while this one was starting (now run run-b, running); run again',
    );
    expect(api.holder()).toBeNull();
  });
});
