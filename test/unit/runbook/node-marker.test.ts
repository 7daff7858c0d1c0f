import { describe, expect, it } from 'vitest';
import type { Cluster } from '../../../src/cluster/api.js';
import { finalState, NodeMarker } from '../../../src/runbook/node-marker.js';
import type { RunReport } from '../../../src/runbook/report.js';

// The writes a marker makes, through a cluster that records them (or refuses them, as the Lease fence does).
function recordingCluster(refuse = false) {
  const writes: string[] = [];
  const cluster = {
    async mergePatch(_path: string, body: any) {
      if (refuse) throw new Error('the Lease is not ours');
      writes.push(`label ${body.metadata.labels['node-maint.io/state']}`);
      return { metadata: { name: 'n1', uid: 'u1' } };
    },
    async request(_m: string, _p: string, body: any) {
      if (refuse) throw new Error('the Lease is not ours');
      writes.push(`event ${body.reason} ${body.involvedObject.uid}`);
      return {};
    },
  } as unknown as Cluster;
  return { cluster, writes };
}

const report = (result: RunReport['result']) => ({ result, versions: { before: { containerd: 'a' }, after: { containerd: 'b' }, target: {} }, error: result === 'upgraded' ? undefined : { code: 'x', message: 'boom' } }) as unknown as RunReport;

describe('NodeMarker', () => {
  it('writes nothing before the run holds the Lease and acts', async () => {
    const { cluster, writes } = recordingCluster();
    const m = new NodeMarker(cluster, 'n1', 'r1', () => undefined);
    m.observe({ type: 'step', phase: 'start', step: 'drain', index: 2, total: 11, title: 'Drain' });
    await m.finish(report('nothing-to-do'));
    expect(writes).toEqual([]);
  });

  it('follows the steps, once per state, and ends with the result; Events carry the node uid', async () => {
    const { cluster, writes } = recordingCluster();
    const m = new NodeMarker(cluster, 'n1', 'r1', () => undefined);
    m.begin({ containerd: 'a' }, { containerd: 'b' }, 'draining');
    for (const step of ['cordon', 'drain', 'stop-kubelet', 'upgrade-runtime']) m.observe({ type: 'step', phase: 'start', step, index: 0, total: 11, title: step });
    m.observe({ type: 'step', phase: 'done', step: 'upgrade-runtime', summary: 'containerd b', durationMs: 1, actions: [] });
    await m.finish(report('rolled-back'));
    expect(writes).toEqual(['label draining', 'event MaintenanceStarted u1', 'label upgrading', 'event RuntimeUpgraded u1', 'label rolled-back', 'event RolledBack u1']);
  });

  it('a reboot alone: no versions to name (annotations removed, words without arrows), `rebooting` rather than `upgrading`, an Event for the reboot (issue 36 item 9)', async () => {
    const patches: any[] = [];
    const events: any[] = [];
    const cluster = {
      mergePatch: async (_p: string, body: any) => (patches.push(body.metadata), { metadata: { uid: 'u1' } }),
      request: async (_m: string, _p: string, body: any) => (events.push(`${body.reason}: ${body.message}`), {}),
    } as unknown as Cluster;
    const m = new NodeMarker(cluster, 'n1', 'r1', () => undefined);
    m.begin({ containerd: 'a' }, {}, 'draining');
    for (const step of ['drain', 'stop-kubelet', 'teardown-sandboxes', 'reboot-node', 'start-kubelet']) m.observe({ type: 'step', phase: 'start', step, index: 0, total: 12, title: step });
    m.observe({ type: 'step', phase: 'done', step: 'reboot-node', summary: 'rebooted in 9s (boot a/1 -> a/2)', durationMs: 1, actions: [] });
    await m.finish({ result: 'rebooted', versions: { before: {}, after: {}, target: {} }, reboot: { before: 'a/1', after: 'a/2' } } as unknown as RunReport);
    expect(patches[0].annotations).toMatchObject({ 'node-maint.io/run-id': 'r1', 'node-maint.io/from': null, 'node-maint.io/to': null });
    expect(patches.map((p) => p.labels['node-maint.io/state'])).toEqual(['draining', 'rebooting', 'verifying', 'done']);
    expect(events).toEqual(['MaintenanceStarted: node-maint run r1: a reboot, no package changed', 'Rebooted: rebooted in 9s (boot a/1 -> a/2)', 'MaintenanceDone: rebooted, audit clean']);
  });

  it('a mark that cannot be written is said once and does not fail the run', async () => {
    const { cluster } = recordingCluster(true);
    const lines: string[] = [];
    const m = new NodeMarker(cluster, 'n1', 'r1', (l) => lines.push(l));
    m.begin({}, { containerd: 'b' }, 'draining');
    await expect(m.finish(report('failed'))).resolves.toBeUndefined();
    expect(lines).toEqual(['could not mark the node (the Lease is not ours); the run goes on']);
  });

  it('a node passed by as undrainable is labelled skipped with a Warning Event, without a run having begun', async () => {
    const { cluster, writes } = recordingCluster();
    await new NodeMarker(cluster, 'n1', 'r1', () => undefined).skipped('budget ledger allows no eviction');
    expect(writes).toEqual(['label skipped', 'event MaintenanceSkipped u1']);
  });

  it('maps results to the final state', () => {
    expect(['upgraded', 'rolled-back', 'leaks-found', 'rollback-failed'].map((r) => finalState(r as RunReport['result']))).toEqual(['done', 'rolled-back', 'failed', 'failed']);
  });
});
