import { describe, expect, it } from 'vitest';
import { auditExitCode, renderAudit } from '../../../src/cli/render-audit.js';
import { auditNode, type AuditInput } from '../../../src/leaks/audit.js';
import { findingKey, planLines, planReclaim } from '../../../src/leaks/reclaim/plan.js';
import { summarize, type AuditVerdict, type Finding } from '../../../src/leaks/types.js';
import { emptyState, kubenetNode, podOn } from './state-builder.js';

// Fail closed: a check that cannot look is "could not verify", never "clean"; reclaim does nothing on such an audit.
const input = (over: Partial<AuditInput>): AuditInput => ({ node: 'n', state: kubenetNode(3, 0), pods: [], podCidr: '10.253.6.128/25', ...over });
const stuck = podOn('stuck', undefined, { deletionTimestamp: new Date((kubenetNode(0, 0).now - 300) * 1000).toISOString(), deletionGracePeriodSeconds: 30 });
const orphan: Finding = { class: 'calico-affinity-orphan', severity: 'leak', message: 'block affinity x of gone-node', evidence: { affinity: 'x', node: 'gone-node' } };

const rows: Array<[string, Partial<AuditInput>, AuditVerdict, number]> = [
  ['every source answered, nothing found', {}, 'clean', 0],
  ['every source answered, a leak found', { state: kubenetNode(2, 1) }, 'leaks', 0],
  ['the runtime did not answer', { state: { ...kubenetNode(2, 1), runtimeReachable: false } }, 'unverifiable', 1],
  ['the pod list could not be read', { pods: undefined, podListError: 'forbidden' }, 'unverifiable', 1],
  ['Calico could not be read', { unverifiable: ["Calico's IPAM could not be read"] }, 'unverifiable', 1],
  ['the runtime did not answer, yet a pod is proven stuck', { state: { ...kubenetNode(0, 0), runtimeReachable: false }, pods: [stuck] }, 'leaks', 1],
  ['only cluster-wide findings', { calico: { node: [], cluster: [orphan] } }, 'clean', 0],
];

describe('audit verdict', () => {
  it.each(rows)('%s: %s', (_, over, verdict, blind) => {
    const report = auditNode(input(over));
    expect(report.verdict).toBe(verdict);
    expect(report.unverifiable).toHaveLength(blind);
  });

  it('never judges a reservation dead by the pods\' silence when the pod list could not be read', () => {
    const state = kubenetNode(0, 2);
    state.cniCache = [];
    const report = auditNode(input({ state, pods: undefined, podListError: 'the server is unavailable' }));
    expect(report.findings).toEqual([]);
    expect(report.unverifiable).toEqual([expect.stringMatching(/pod list could not be read \(the server is unavailable\)/)]);
  });

  it('exits 0 clean, 13 for the node\'s findings, 15 when it could not verify', () => {
    expect([auditExitCode('clean'), auditExitCode('leaks'), auditExitCode('unverifiable')]).toEqual([0, 13, 15]);
  });

  it('renders what could not be checked, and cluster-wide findings in their own section', () => {
    const text = renderAudit(auditNode(input({ state: { ...kubenetNode(1, 0), runtimeReachable: false }, calico: { node: [], cluster: [orphan] } })));
    expect(text).toMatch(/^Leak audit of node n: could not verify/);
    expect(text).toMatch(/Could not verify:\n {2}- the container runtime did not answer/);
    expect(text).toMatch(/Cluster-wide \(1, not this node's[^\n]*\n {2}calico-affinity-orphan \(1\):\n {4}\[leak\] block affinity x/);
    expect(text).toMatch(/range kubenet 10\.253\.6\.128\/25: usable 125, allocated 1, in use 1, leaked 0/);
  });

  it('summarizes the verdict and the cluster-wide count for the run report', () => {
    const summary = summarize(auditNode(input({ state: kubenetNode(3, 0), calico: { node: [], cluster: [orphan] } })));
    expect(summary).toMatchObject({ verdict: 'clean', findings: 0, clusterFindings: 1, unverifiable: [] });
  });
});

describe('reclaim on a blind audit', () => {
  it('refuses to act at all, saying why', () => {
    const state = kubenetNode(0, 2);
    const findings = auditNode(input({ state })).findings;
    expect(findings.length).toBeGreaterThan(0);
    const acting = planReclaim({ first: findings, second: findings, unverifiable: [], state, graceSeconds: 0 });
    expect(acting.reservations.length + acting.replays.length).toBeGreaterThan(0);
    const refused = planReclaim({ first: findings, second: findings, unverifiable: ['the pod list could not be read'], state, graceSeconds: 0 });
    expect(refused).toMatchObject({ replays: [], reservations: [], checkpoints: [], netns: [], containers: [], calico: [], refused: ['the pod list could not be read'] });
    expect(refused.skipped).toHaveLength(findings.length);
    expect(planLines(refused)).toEqual(['refused, nothing will be done: the pod list could not be read']);
  });

  it("says a DEL replay's addresses as its cached result names them, never as freed (the IPAM may have given them back)", () => {
    const empty = planReclaim({ first: [], second: [], unverifiable: [], state: emptyState(), graceSeconds: 0 });
    const replay = { networkName: 'k8s-pod-network', ifName: 'eth0', containerId: 'a'.repeat(64), ips: ['10.233.64.9'] };
    expect(planLines({ ...empty, replays: [replay as never] })).toEqual([`replay CNI DEL k8s-pod-network/eth0 of ${'a'.repeat(12)} (its cached result names 10.233.64.9; the plugin releases what it still holds)`]);
  });

  it('still releases cluster-wide Calico leaks it saw twice, once their objects are older than --grace', () => {
    const plan = planReclaim({ first: [orphan], second: [orphan], unverifiable: [], state: emptyState(), graceSeconds: 0 });
    expect(plan.calico).toEqual([orphan]);
    const young = planReclaim({ first: [orphan], second: [orphan], unverifiable: [], state: emptyState(), graceSeconds: 120, apiAges: new Map([[findingKey(orphan), 82.4]]) });
    expect(young.calico).toEqual([]);
    expect(planLines(young)).toEqual(['left alone: calico-affinity-orphan: block affinity x of gone-node (younger than --grace 120s (82s old): releasable in 38s)']);
    const old = planReclaim({ first: [orphan], second: [orphan], unverifiable: [], state: emptyState(), graceSeconds: 120, apiAges: new Map([[findingKey(orphan), 121]]) });
    expect(old.calico).toEqual([orphan]);
  });

  it('holds back what is younger than --grace, by its own age (a netns by its pin), and says when it becomes releasable', () => {
    const state = kubenetNode(0, 1);
    state.netns = ['cni-0a1b2c3d-0000-0000-0000-000000000001'];
    state.netnsActivity = { [state.netns[0]!]: { ageSeconds: 82, processes: 0 } };
    const findings = auditNode(input({ state })).findings;
    const netns = findings.find((f) => f.class === 'netns-orphan');
    expect(netns?.evidence.file).toBe(`/var/run/netns/${state.netns[0]}`);
    const ages = [...state.cniCache, ...state.ipam.flatMap((d) => d.reservations)].map((e) => state.now - e.mtime);
    const grace = Math.max(...ages, 82) + 10;
    const held = planReclaim({ first: findings, second: findings, unverifiable: [], state, graceSeconds: grace });
    expect(held.netns.length + held.reservations.length + held.replays.length).toBe(0);
    expect(held.skipped.find((s) => s.finding === netns)?.reason).toBe(`younger than --grace ${grace}s (82s old): releasable in ${grace - 82}s`);
    expect(held.skipped.every((s) => /^younger than --grace \d+s \(\d+s old\): releasable in \d+s$/.test(s.reason))).toBe(true);
    const released = planReclaim({ first: findings, second: findings, unverifiable: [], state, graceSeconds: 82 });
    expect(released.netns).toEqual([state.netns[0]]);
  });
});
