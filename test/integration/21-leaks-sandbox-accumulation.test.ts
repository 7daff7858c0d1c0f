import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson, realNodeAudit, resetRealNode, sh, waitFor } from './bed.js';

// Field report 002: a pod whose command does not exist leaves Created containers; each time its sandbox dies,
// kubelet makes a new one, and the old sandbox, still referenced by its Created container, is never removed.
describe('a pod whose command does not exist', () => {
  beforeAll(async () => {
    await resetRealNode();
    await kubectl('-n', 'demo', 'run', 'crashy', '--image=testbed/busybox:1', '--image-pull-policy=Never', `--overrides={"spec":{"nodeName":"${bed().realNode}"}}`, '--command', '--', '/no/such/binary');
    const created = () => sh(`docker ps -a --filter label=io.kubernetes.pod.name=crashy --filter status=created -q | wc -l`);
    const runningSandbox = () => sh('docker ps -q --filter label=io.kubernetes.pod.name=crashy --filter label=io.kubernetes.docker.type=podsandbox --filter status=running');
    for (let round = 0; round < 3; round++) {
      let sandbox = '';
      await waitFor(async () => {
        sandbox = (await runningSandbox()).trim();
        return sandbox !== '' && Number(await created()) > round;
      }, 120_000, `a running sandbox and a Created container in round ${round}`);
      // The sandbox dies (as on a docker restart); kubelet makes a new one and the old one stays behind.
      await sh(`docker kill ${sandbox}`);
    }
    await waitFor(async () => Number(await created()) >= 3, 120_000, 'three Created containers');
  });

  afterAll(async () => {
    await kubectl('-n', 'demo', 'delete', 'pod', 'crashy', '--grace-period=0', '--force');
  });

  it('accumulates Created containers and not-ready sandboxes: found and counted', async () => {
    const truth = await sh(`
      for s in $(docker ps -a -q --no-trunc --filter label=io.kubernetes.pod.name=crashy --filter label=io.kubernetes.docker.type=podsandbox --filter status=exited); do
        n=$(docker ps -a -q --filter label=io.kubernetes.sandbox.id=$s --filter status=created | wc -l)
        [ "$n" -gt 0 ] && echo "$s $n"
      done`);
    const held = truth.split('\n').filter(Boolean);
    expect(held.length).toBeGreaterThanOrEqual(2);
    const result = await realNodeAudit();
    expect(result.code).toBe(13);
    const report = JSON.parse(result.stdout);
    const finding = report.findings.find((f: any) => f.class === 'sandbox-accumulation' && f.evidence.pod === 'demo/crashy');
    expect(finding.evidence.sandboxes).toBe(held.length);
    expect(finding.evidence.containers).toBe(held.reduce((n, line) => n + Number(line.split(' ')[1]), 0));
    expect(report.counts.notReadySandboxes).toBeGreaterThanOrEqual(held.length);
    const pod = await kubectlJson('get', 'pod', '-n', 'demo', 'crashy');
    expect(pod.status.containerStatuses[0].ready).toBe(false);
  });
});
