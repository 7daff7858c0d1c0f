import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson, realNodeAudit, resetRealNode, sh, waitFor } from './bed.js';

// Field report 003: a pod stays Terminating past its grace period because containers of it are left in the runtime.
describe('a pod stuck Terminating by a leftover container', () => {
  let uid = '';
  beforeAll(async () => {
    await resetRealNode();
    await kubectl('-n', 'demo', 'run', 'holdout', '--image=testbed/busybox:1', '--image-pull-policy=Never', `--overrides={"spec":{"nodeName":"${bed().realNode}","terminationGracePeriodSeconds":2}}`, '--', 'sleep', '3600');
    await waitFor(async () => (await kubectlJson('get', 'pod', '-n', 'demo', 'holdout')).status.phase === 'Running', 120_000, 'holdout running');
    uid = (await kubectlJson('get', 'pod', '-n', 'demo', 'holdout')).metadata.uid;
    // Nobody is left on the node to finish the deletion: the container stays, the pod stays Terminating.
    await sh('systemctl stop kubelet');
    await kubectl('-n', 'demo', 'delete', 'pod', 'holdout', '--wait=false');
    await sh('sleep 8');
  });

  afterAll(async () => {
    await sh('systemctl start kubelet');
    await waitFor(async () => !(await kubectl('-n', 'demo', 'get', 'pods', '-o', 'name')).includes('holdout'), 180_000, 'holdout gone');
  });

  it('is found, with the containers that hold it', async () => {
    const result = await realNodeAudit();
    expect(result.code).toBe(13);
    const finding = JSON.parse(result.stdout).findings.find((f: any) => f.class === 'stuck-terminating');
    expect(finding.evidence.pod).toBe('demo/holdout');
    const ids = (await sh(`docker ps -aq --no-trunc --filter label=io.kubernetes.pod.uid=${uid} --filter label=io.kubernetes.docker.type=container`)).split('\n').filter(Boolean);
    expect(finding.evidence.containers.map((c: any) => c.id).sort()).toEqual(ids.sort());
    expect(finding.evidence.containers[0].state).toBe('running');
    expect(finding.evidence.sandboxes).toHaveLength(1);
  });
});
