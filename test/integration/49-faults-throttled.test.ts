import type { ClientRequest } from 'node:http';
import { Agent, get } from 'node:https';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, bed, DRAIN_FLAGS, kubectl, serviceAccountKubeconfig, upgradeNode } from './bed.js';
import { pinnedDeployment } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

// API Priority and Fairness, for real: a FlowSchema puts the run's ServiceAccount in a priority level of its own (a
// few seats on the bed's apiserver, no queue: Reject). This test holds every seat from the same account: lists of
// ~14 MiB of ConfigMaps whose answers it does not read, so the apiserver's handlers block writing them and keep their
// seats (a loop of quick requests does not: on a busy machine its gaps let the run through). The apiserver answers
// the run 429 with Retry-After; the seats are let go once the run says it is waiting them out; it must end upgraded.
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
    // The ballast: 16 ConfigMaps of 900 KiB (created, not applied: apply would copy each into an annotation).
    const file = join(mkdtempSync(join(tmpdir(), 'node-maint-ballast-')), 'ballast.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Array.from({ length: 16 }, (_, i) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `ballast-${i}`, namespace: ns.name }, data: { ballast: 'x'.repeat(900 * 1024) } })) }));
    await kubectl('create', '-f', file);
  });

  afterAll(async () => {
    await kubectl('delete', 'flowschema,prioritylevelconfiguration,clusterrolebinding', level(), '--ignore-not-found');
  });

  /**
   * Sixteen holders, each a list of the ballast it does not read (a stalled answer keeps its seat until the
   * apiserver's request timeout, then it asks again); those that find no seat are answered 429 and ask again. Until
   * let go: what they were answered, by status.
   */
  function holdSeats(): { throttled: Promise<void>; letGo: () => Promise<Record<string, number>> } {
    const server = JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster;
    const agent = new Agent({ keepAlive: false, maxSockets: Infinity, ca: Buffer.from(server['certificate-authority-data'], 'base64') });
    const counts: Record<string, number> = {};
    const open = new Set<ClientRequest>();
    let holding = true;
    let throttled = () => undefined as void;
    // One request: a 200 is held unread (its seat with it) until let go or timed out; each ends 200 ms before the next.
    const once = () =>
      new Promise<void>((resolve) => {
        const req = get(`${server.server}/api/v1/namespaces/${ns.name}/configmaps`, { agent, headers: { Authorization: `Bearer ${token}` } }, (res) => {
          counts[String(res.statusCode)] = (counts[String(res.statusCode)] ?? 0) + 1;
          res.on('error', () => undefined);
          if (res.statusCode === 429) throttled();
          if (res.statusCode === 200) res.pause();
          else res.resume();
        });
        open.add(req);
        req.on('close', () => {
          open.delete(req);
          setTimeout(resolve, 200);
        });
        req.on('error', () => undefined);
      });
    const holders = Array.from({ length: 16 }, async () => {
      while (holding) await once();
    });
    return {
      throttled: new Promise<void>((resolve) => (throttled = resolve)),
      letGo: async () => {
        holding = false;
        for (const req of open) req.destroy();
        await Promise.all(holders);
        agent.destroy();
        return counts;
      },
    };
  }

  it('a full upgrade meets 429s with Retry-After, waits them out, and ends upgraded and leak-free', async () => {
    const flags = t.flags.map((f) => (f === bed().kubeconfig ? kubeconfig : f));
    const seats = holdSeats();
    await Promise.race([seats.throttled, new Promise((_, reject) => setTimeout(() => reject(new Error('the holders met no 429 in 60 s')), 60_000))]);
    // Let go once the run says it waits out a 429 (or after five minutes: then the assertions below fail).
    let letGo: Promise<Record<string, number>> | undefined;
    const release = () => (letGo ??= seats.letGo());
    const deadline = setTimeout(release, 300_000);
    const result = await upgradeNode([t.name, '--to', `containerd=${bed().containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...flags], {
      onStderr: (stderr) => void (/the Kubernetes API is throttling/.test(stderr) && release()),
    });
    clearTimeout(deadline);
    const answered = await release();
    expect(answered['429'], 'the bed\'s apiserver throttled the account').toBeGreaterThan(0);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ result: 'upgraded', versions: { after: { containerd: bed().containerd.new } } });
    expect(report.audit.findings).toBe(0);
    expect(result.stderr).toMatch(/the Kubernetes API is throttling \w+ \/\S+ \(429 [^)]*\); asking again after \d+s \(Retry-After\)/);
  });
});
