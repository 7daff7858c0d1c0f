import { Agent, get } from 'node:https';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, DRAIN_FLAGS, kubectl, serviceAccountKubeconfig, upgradeNode } from './bed.js';
import { pinnedDeployment } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

// API Priority and Fairness, for real: a FlowSchema puts the run's ServiceAccount in a priority level of its own (3
// seats on the bed's apiserver, no queue: Reject), which this test keeps busy from the same account for the run's
// first half minute. The apiserver answers 429 with Retry-After; the run must wait them out and end upgraded.
describe('an apiserver that throttles the run (API Priority and Fairness, 429)', () => {
  const [t] = useNodes('containerd');
  const ns = useNamespace();
  const level = () => `node-maint-test-throttled-${ns.name}`;
  let kubeconfig: string;
  let token: string;

  beforeAll(async () => {
    await kubectl('-n', ns.name, 'create', 'serviceaccount', 'throttled');
    await kubectl('create', 'clusterrolebinding', level(), '--clusterrole=cluster-admin', `--serviceaccount=${ns.name}:throttled`);
    ({ kubeconfig, token } = await serviceAccountKubeconfig(ns.name, 'throttled'));
    await applyObjects([
      { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name: level() },
        spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } } } },
      { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', metadata: { name: level() },
        spec: { priorityLevelConfiguration: { name: level() }, matchingPrecedence: 100, distinguisherMethod: { type: 'ByUser' },
          rules: [{ subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: 'throttled', namespace: ns.name } }],
            resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }] } },
    ]);
    await pinnedDeployment(ns.name, 'api', t.name, 2);
  });

  afterAll(async () => {
    await kubectl('delete', 'flowschema,prioritylevelconfiguration,clusterrolebinding', level(), '--ignore-not-found');
  });

  /** Eight loops of lists as the run's own account (more than the level's seats, always), until stopped: what they were answered, by status. */
  function keepBusy(): { throttled: Promise<void>; stop: () => Promise<Record<string, number>> } {
    const server = JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster;
    const agent = new Agent({ keepAlive: true, ca: Buffer.from(server['certificate-authority-data'], 'base64') });
    const counts: Record<string, number> = {};
    let running = true;
    let throttled = () => undefined as void;
    const once = () =>
      new Promise<void>((resolve) => {
        const req = get(`${server.server}/api/v1/pods?limit=100`, { agent, headers: { Authorization: `Bearer ${token}` } }, (res) => {
          res.resume();
          res.on('end', () => {
            counts[String(res.statusCode)] = (counts[String(res.statusCode)] ?? 0) + 1;
            if (res.statusCode === 429) throttled();
            resolve();
          });
        });
        req.on('error', () => resolve());
      });
    const loops = Array.from({ length: 8 }, async () => {
      while (running) await once();
    });
    return {
      throttled: new Promise<void>((resolve) => (throttled = resolve)),
      stop: async () => {
        running = false;
        await Promise.all(loops);
        agent.destroy();
        return counts;
      },
    };
  }

  it('a full upgrade meets 429s with Retry-After, waits them out, and ends upgraded and leak-free', async () => {
    const flags = t.flags.map((f) => (f === bed().kubeconfig ? kubeconfig : f));
    const busy = keepBusy();
    // The run starts once the level is full (the FlowSchema in force): its first requests, the 16 access reviews it
    // sends at once, then meet 429s of their own.
    await Promise.race([busy.throttled, new Promise((_, reject) => setTimeout(() => reject(new Error('the hammer met no 429 in 60 s')), 60_000))]);
    const stopping = new Promise<Record<string, number>>((resolve) => setTimeout(() => resolve(busy.stop()), 30_000));
    const result = await upgradeNode([t.name, '--to', `containerd=${bed().containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...flags]);
    const answered = await stopping;
    expect(answered['429'], 'the bed\'s apiserver throttled the account').toBeGreaterThan(0);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ result: 'upgraded', versions: { after: { containerd: bed().containerd.new } } });
    expect(report.audit.findings).toBe(0);
    expect(result.stderr).toMatch(/the Kubernetes API is throttling \w+ \/\S+ \(429 [^)]*\); asking again after \d+s \(Retry-After\)/);
  });
});
