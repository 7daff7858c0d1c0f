import { beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, kubectlJson, waitFor } from './bed.js';
import { nodeAudit, pinnedPodSpec } from './fixtures.js';
import { setFault } from './faults.js';
import { useNamespace, useNodes } from './pool.js';

// Field report 002: a pod whose command does not exist leaves Created containers; each time its sandbox dies,
// kubelet makes a new one, and the old sandbox, still referenced by its Created container, is never removed. The
// bed's kubelet 1.32 collects dead containers beyond one per container within a minute: here it keeps them, as the
// field's did (--maximum-dead-containers-per-container=-1), so the pile-up stands until the audit has looked.
describe('a pod whose command does not exist', () => {
  const [t] = useNodes('docker');
  const ns = useNamespace();
  beforeAll(async () => {
    await setFault(t, 'kubelet-extra-args', '--maximum-dead-containers-per-container=-1 --maximum-dead-containers=-1');
    await t.sh('systemctl restart kubelet');
    const spec = pinnedPodSpec(t.name, { nodeName: t.name, containers: [{ name: 'c', image: 'testbed/busybox:1', imagePullPolicy: 'Never', command: ['/no/such/binary'] }] });
    await applyObjects([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'crashy', namespace: ns.name }, spec }]);
    const created = () => t.sh(`docker ps -a --filter label=io.kubernetes.pod.name=crashy --filter status=created -q | wc -l`);
    const runningSandbox = () => t.sh('docker ps -q --filter label=io.kubernetes.pod.name=crashy --filter label=io.kubernetes.docker.type=podsandbox --filter status=running');
    for (let round = 0; round < 3; round++) {
      let sandbox = '';
      await waitFor(async () => {
        sandbox = (await runningSandbox()).trim();
        return sandbox !== '' && Number(await created()) > round;
      }, 120_000, `a running sandbox and a Created container in round ${round}`);
      // The sandbox dies (as on a docker restart); kubelet makes a new one and the old one stays behind. One that died
      // on its own between the look and the kill is what the kill wants; one still running after a failed kill is not.
      await t.sh(`docker kill ${sandbox} >/dev/null 2>&1 || [ "$(docker inspect -f '{{.State.Running}}' ${sandbox})" = false ]`);
    }
    await waitFor(async () => Number(await created()) >= 3, 120_000, 'three Created containers');
  });

  it('accumulates Created containers and not-ready sandboxes: found and counted', async () => {
    const truth = await t.sh(`
      for s in $(docker ps -a -q --no-trunc --filter label=io.kubernetes.pod.name=crashy --filter label=io.kubernetes.docker.type=podsandbox --filter status=exited); do
        n=$(docker ps -a -q --filter label=io.kubernetes.sandbox.id=$s --filter status=created | wc -l)
        [ "$n" -gt 0 ] && echo "$s $n"
      done; true`);
    const held = truth.split('\n').filter(Boolean);
    expect(held.length).toBeGreaterThanOrEqual(2);
    const result = await nodeAudit(t);
    expect(result.code).toBe(13);
    const report = JSON.parse(result.stdout);
    const finding = report.findings.find((f: any) => f.class === 'sandbox-accumulation' && f.evidence.pod === `${ns.name}/crashy`);
    expect(finding.evidence.sandboxes).toBe(held.length);
    expect(finding.evidence.containers).toBe(held.reduce((n, line) => n + Number(line.split(' ')[1]), 0));
    expect(report.counts.notReadySandboxes).toBeGreaterThanOrEqual(held.length);
    const pod = await kubectlJson('get', 'pod', '-n', ns.name, 'crashy');
    expect(pod.status.containerStatuses[0].ready).toBe(false);
  });
});
