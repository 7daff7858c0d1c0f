import { describe, expect, it } from 'vitest';
import { budgetBlocks } from '../../../src/cluster/drain/budgets.js';
import { classifyPods, DEFAULT_DRAIN_OPTIONS, refusalMessage } from '../../../src/cluster/drain/filters.js';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { graceOutlastsTimeout, planDrain } from '../../../src/cluster/drain/plan.js';
import { isControlPlane } from '../../../src/cluster/nodes.js';
import { matchesSelector } from '../../../src/cluster/selector.js';
import type { Pod, PodDisruptionBudget } from '../../../src/cluster/types.js';

const pod = (name: string, extra: Partial<Pod['metadata']> = {}, spec: Partial<Pod['spec']> = {}, ready = true): Pod => ({
  metadata: { name, namespace: 'ns', uid: name, labels: { app: name.split('-')[0]! }, ...extra },
  spec: { ...spec },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
const owned = (kind: string, name: string) => ({ ownerReferences: [{ kind, name, uid: 'u', controller: true, apiVersion: 'apps/v1' }] });
const budget = (name: string, app: string, allowed: number, extra: Partial<PodDisruptionBudget['spec']> = {}): PodDisruptionBudget => ({
  metadata: { name, namespace: 'ns' },
  spec: { selector: { matchLabels: { app } }, ...extra },
  status: { disruptionsAllowed: allowed, currentHealthy: 1, desiredHealthy: 1 },
});

describe('drain classification (kubectl drain semantics)', () => {
  const pods = [
    pod('web-1', owned('ReplicaSet', 'web')),
    pod('agent-1', owned('DaemonSet', 'agent')),
    pod('orphan-1', owned('DaemonSet', 'gone')),
    pod('static-1', { annotations: { 'kubernetes.io/config.mirror': 'x' } }),
    pod('cache-1', owned('ReplicaSet', 'cache'), { volumes: [{ name: 'v', emptyDir: {} }] }),
    pod('bare-1'),
    pod('dying-1', { ...owned('ReplicaSet', 'web'), deletionTimestamp: '2026-01-01T00:00:00Z' }),
  ];
  const daemonSets = new Set(['ns/agent']);

  it('--skip-wait-for-delete-timeout: a pod deleted longer ago is skipped (as kubectl), a fresher one still waited for', () => {
    const now = Date.parse('2026-01-01T00:01:00Z');
    const fresh = pod('dying-2', { ...owned('ReplicaSet', 'web'), deletionTimestamp: '2026-01-01T00:00:50Z' });
    const skip = (seconds: number) => classifyPods([pods[6]!, fresh], { ...DEFAULT_DRAIN_OPTIONS, skipWaitForDeleteTimeoutSeconds: seconds }, daemonSets, now).map((v) => v.verdict);
    expect(skip(30)).toEqual([{ action: 'skip', reason: 'deleted 60s ago, past --skip-wait-for-delete-timeout' }, { action: 'wait', reason: 'already terminating' }]);
    expect(skip(0).map((v) => v.action)).toEqual(['wait', 'wait']);
    expect(skip(60).map((v) => v.action)).toEqual(['wait', 'wait']);
  });

  it('refuses DaemonSet, emptyDir and unmanaged pods without the flags, all at once', () => {
    const message = refusalMessage(classifyPods(pods, DEFAULT_DRAIN_OPTIONS, daemonSets));
    expect(message).toContain('cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): ns/agent-1');
    expect(message).toContain('cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/cache-1');
    expect(message).toContain('cannot delete Pods that declare no controller (use --force to override): ns/bare-1');
    expect(message).toContain('ns/orphan-1');
  });

  it('with the flags: evicts what must go, leaves DaemonSet and mirror pods, waits for terminating ones', () => {
    const verdicts = classifyPods(pods, { ...DEFAULT_DRAIN_OPTIONS, ignoreDaemonSets: true, deleteEmptyDirData: true, force: true }, daemonSets);
    const by = Object.fromEntries(verdicts.map((v) => [v.pod.metadata.name, v.verdict.action]));
    expect(by).toEqual({ 'web-1': 'evict', 'agent-1': 'skip', 'orphan-1': 'evict', 'static-1': 'skip', 'cache-1': 'evict', 'bare-1': 'evict', 'dying-1': 'wait' });
    expect(refusalMessage(verdicts)).toBeUndefined();
  });
});

describe('PodDisruptionBudget feasibility before cordon', () => {
  it('blocks a pod whose only budget allows no disruption, names the budget, and says if that can change', () => {
    expect(budgetBlocks([pod('ledger-1', owned('ReplicaSet', 'l'))], [budget('ledger', 'ledger', 0, { maxUnavailable: 0 })])).toEqual([
      { pod: 'ns/ledger-1', budgets: ['ns/ledger'], reason: 'its PodDisruptionBudget allows no disruption', permanent: true },
    ]);
    const forNow = budgetBlocks([pod('web-1')], [{ ...budget('web', 'web', 0, { minAvailable: 2 }), status: { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 4 } }]);
    expect(forNow).toEqual([{ pod: 'ns/web-1', budgets: ['ns/web'], reason: 'its PodDisruptionBudget allows no disruption now (2 healthy, 2 needed)', permanent: false }]);
    expect(budgetBlocks([pod('db-1')], [{ ...budget('db', 'db', 0, { minAvailable: 3 }), status: { disruptionsAllowed: 0, expectedPods: 3 } }])[0]!.permanent).toBe(true);
  });
  it('lets pods go when the budget allows, or an unready pod under a healthy budget', () => {
    expect(budgetBlocks([pod('web-1')], [budget('web', 'web', 1)])).toEqual([]);
    expect(budgetBlocks([pod('web-1', {}, {}, false)], [budget('web', 'web', 0)])).toEqual([]);
    expect(budgetBlocks([pod('web-1', {}, {}, false)], [{ ...budget('web', 'web', 0), status: { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 2 } }])).toHaveLength(1);
  });
  it('blocks a pod selected by two budgets (the API answers 500)', () => {
    expect(budgetBlocks([pod('web-1')], [budget('a', 'web', 5), budget('b', 'web', 5)])[0]!.reason).toMatch(/more than one/);
  });
  it('matches selectors as the API server', () => {
    expect(matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['db'] }] }, { tier: 'db' })).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, { tier: 'db' })).toBe(false);
    expect(matchesSelector({}, { any: 'thing' })).toBe(true);
    expect(matchesSelector(undefined, {})).toBe(false);
  });
});

describe('what preflight refuses before the drain', () => {
  const opts = { ...DEFAULT_DRAIN_OPTIONS, timeoutSeconds: 60 };
  it('a pod whose grace period (its own, or --grace-period) is not shorter than the drain timeout', () => {
    const slow = pod('db-1', {}, { terminationGracePeriodSeconds: 300 });
    expect(graceOutlastsTimeout([pod('web-1'), slow], opts)).toEqual(['ns/db-1 (grace 300s)']);
    expect(graceOutlastsTimeout([slow], { ...opts, gracePeriodSeconds: 10 })).toEqual([]);
    expect(graceOutlastsTimeout([pod('web-1')], { ...opts, timeoutSeconds: 30 })).toEqual(['ns/web-1 (grace 30s)']);
  });
  it('knows a control-plane node by its role label or by the static pods it runs', () => {
    const node = (labels: Record<string, string>) => ({ metadata: { name: 'n', labels }, spec: {} });
    expect(isControlPlane(node({ 'node-role.kubernetes.io/control-plane': '' }), [])).toBe('label node-role.kubernetes.io/control-plane');
    const etcd = pod('etcd-n', { labels: { component: 'etcd', tier: 'control-plane' }, annotations: { 'kubernetes.io/config.mirror': 'x' } });
    expect(isControlPlane(node({}), [etcd])).toBe('static pods etcd-n');
    expect(isControlPlane(node({}), [pod('web-1', { annotations: { 'kubernetes.io/config.mirror': 'x' } })])).toBeUndefined();
  });
});

describe("the drain's plan reads the node's pods, and their DaemonSets by name", () => {
  it('asks for no cluster-wide list: a DaemonSet that is gone makes its pod an orphan, as in kubectl', async () => {
    const asked: string[] = [];
    const items = [pod('agent-1', owned('DaemonSet', 'agent')), pod('orphan-1', owned('DaemonSet', 'gone')), pod('web-1', owned('ReplicaSet', 'web'))];
    const cluster = {
      get: async (path: string) => {
        asked.push(path.split('&limit')[0]!);
        if (path.startsWith('/api/v1/pods?')) return { metadata: {}, items };
        if (path === '/apis/apps/v1/namespaces/ns/daemonsets/agent') return { metadata: { name: 'agent', namespace: 'ns' } };
        throw new ApiError(404, 'NotFound', 'not found');
      },
    } as unknown as Cluster;
    const plan = await planDrain(cluster, 'n1', { ...DEFAULT_DRAIN_OPTIONS, ignoreDaemonSets: true });
    expect(plan.refused).toContain('orphan-1');
    expect(plan.skipped.join()).toContain('ns/agent-1');
    expect(asked.sort()).toEqual(['/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', '/apis/apps/v1/namespaces/ns/daemonsets/agent', '/apis/apps/v1/namespaces/ns/daemonsets/gone']);
  });
});
