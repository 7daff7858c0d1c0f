import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STUCK_AFTER_SECONDS } from '../../src/leaks/detect/sandboxes.js';
import { applyObjects, exists, kubectl, kubectlJson, objectPath, waitFor } from './bed.js';
import { nodeAudit, pinnedPodSpec } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

// Field report 003: a pod stays Terminating past its grace period because containers of it are left in the runtime.
describe('a pod stuck Terminating by a leftover container', () => {
  const [t] = useNodes('docker');
  const ns = useNamespace();
  let uid = '';
  beforeAll(async () => {
    await applyObjects([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'holdout', namespace: ns.name }, spec: { ...pinnedPodSpec(t.name), nodeName: t.name } }]);
    await waitFor(async () => (await kubectlJson('get', 'pod', '-n', ns.name, 'holdout')).status.phase === 'Running', 120_000, 'holdout running');
    uid = (await kubectlJson('get', 'pod', '-n', ns.name, 'holdout')).metadata.uid;
    // Nobody is left on the node to finish the deletion: the container stays, the pod stays Terminating.
    await t.sh('systemctl stop kubelet');
    await kubectl('-n', ns.name, 'delete', 'pod', 'holdout', '--wait=false');
    // Overdue by the audit's rule: past deletionTimestamp (the request plus the grace) by STUCK_AFTER_SECONDS.
    await waitFor(async () => {
      const pod = await kubectlJson('get', 'pod', '-n', ns.name, 'holdout');
      return Date.now() > Date.parse(pod.metadata.deletionTimestamp) + (STUCK_AFTER_SECONDS + 1) * 1000;
    }, 90_000, 'holdout overdue');
  });

  afterAll(async () => {
    await t.sh('systemctl start kubelet');
    await waitFor(async () => !(await exists(objectPath('pod', 'holdout', ns.name))), 180_000, 'holdout gone');
  });

  it('is found, with the containers that hold it', async () => {
    const result = await nodeAudit(t);
    expect(result.code).toBe(13);
    const finding = JSON.parse(result.stdout).findings.find((f: any) => f.class === 'stuck-terminating');
    expect(finding.evidence.pod).toBe(`${ns.name}/holdout`);
    const ids = (await t.sh(`docker ps -aq --no-trunc --filter label=io.kubernetes.pod.uid=${uid} --filter label=io.kubernetes.docker.type=container`)).split('\n').filter(Boolean);
    expect(finding.evidence.containers.map((c: any) => c.id).sort()).toEqual(ids.sort());
    expect(finding.evidence.containers[0].state).toBe('running');
    expect(finding.evidence.sandboxes).toHaveLength(1);
  });
});
