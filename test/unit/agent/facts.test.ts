import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastAuditScript, parseFacts, parseLastAudit } from '../../../src/agent/facts.js';
import { agentUpgradeSpec } from '../../../src/fleet/through-agent.js';
import { runArguments } from '../../../src/agent/spec.js';
import { describeFactsAge, describeLastAudit, observedFromFacts, summarizeLastAudits } from '../../../src/fleet/observe.js';
import { auditMetrics } from '../../../src/metrics/audit.js';
import type { AuditReport } from '../../../src/leaks/types.js';
import type { NodeUpgradeInputs } from '../../../src/fleet/apply.js';

// What a containerd node of the bed prints for the facts script (dpkg-query, apt-cache madison, the sentinel).
const OUT = [
  'containerd\t1.6.20~ds1-1+deb12u2\thi ',
  'runc\t1.1.5+ds1-1+deb12u1\tii ',
  '@@node-maint-offered',
  'containerd\t1.6.20~ds1-1+deb12u3',
  'containerd\t1.6.20~ds1-1+deb12u2',
  'runc\t1.1.5+ds1-1+deb12u1',
  '@@node-maint-reboot',
  'required',
  'linux-image-6.1.0-28-amd64 ',
].join('\n');

describe("a node's facts, as its agent publishes them", () => {
  const at = new Date('2026-11-29T04:00:00Z');
  const facts = parseFacts('n1', ['containerd', 'docker.io', 'runc'], OUT, at);

  it('says what is installed, what is offered and whether a reboot is due', () => {
    expect(facts).toEqual({
      node: 'n1',
      at: '2026-11-29T04:00:00.000Z',
      installed: { containerd: '1.6.20~ds1-1+deb12u2', 'docker.io': 'not installed', runc: '1.1.5+ds1-1+deb12u1' },
      offered: { containerd: ['1.6.20~ds1-1+deb12u3', '1.6.20~ds1-1+deb12u2'], 'docker.io': [], runc: ['1.1.5+ds1-1+deb12u1'] },
      rebootRequired: '/var/run/reboot-required is there (for linux-image-6.1.0-28-amd64)',
    });
  });

  it("are the fleet's look at the node while fresh; missing, stale or silent about a target, the node is not observed", () => {
    const targets = { containerd: '1.6.20~ds1-1+deb12u3' };
    expect(observedFromFacts('n1', facts, targets, true, at.getTime() + 60_000)).toEqual({
      installed: { containerd: '1.6.20~ds1-1+deb12u2' },
      offered: { containerd: ['1.6.20~ds1-1+deb12u3', '1.6.20~ds1-1+deb12u2'] },
      rebootRequired: '/var/run/reboot-required is there (for linux-image-6.1.0-28-amd64)',
      factsAt: facts.at,
    });
    // What the plan rests on, said in the preview: how old the facts are, and that a change since is not seen.
    expect(describeFactsAge(facts.at, at.getTime() + 3 * 60_000)).toBe(`facts 3 min old (written ${facts.at}; its agent reads the node every 5 min and writes them when they change: a change since its last read is not seen)`);
    expect(observedFromFacts('n1', facts, targets, false, at.getTime())).not.toHaveProperty('rebootRequired');
    expect(observedFromFacts('n1', undefined, targets, false)).toMatch(/^no facts from a node-maint agent on it/);
    expect(observedFromFacts('n1', facts, targets, false, at.getTime() + 100 * 60_000)).toHaveProperty('installed');
    expect(observedFromFacts('n1', facts, targets, false, at.getTime() + 130 * 60_000)).toBe("its agent's facts are 130 min old (from 2026-11-29T04:00:00.000Z; an agent writes them when they change and at least hourly: is it running?)");
    expect(observedFromFacts('n1', facts, { 'containerd.io': '1.7' }, false, at.getTime())).toBe('its agent does not report containerd.io (it reports containerd, docker.io, runc: NODE_MAINT_PACKAGES in its DaemonSet)');
  });
});

describe("the last audit's verdict among a node's facts", () => {
  const report = (verdict: AuditReport['verdict'], classes: string[]): AuditReport =>
    ({ node: 'n1', takenAt: 0, verdict, unverifiable: [], findings: classes.map((c) => ({ class: c, severity: 'leak', message: c, evidence: {} })), clusterFindings: [], ipamScope: 'node', leftAlone: [], ranges: [], counts: { reservations: 0, cacheEntries: 0, checkpoints: 0, sandboxes: 0, notReadySandboxes: 0, pods: 0 } }) as AuditReport;
  /** The facts script's audit part, run by sh on a textfile written as a run writes it (auditMetrics). */
  const readBack = async (r: AuditReport | undefined) => {
    const dir = mkdtempSync(join(tmpdir(), 'facts-'));
    try {
      const file = join(dir, 'node_maint_audit.prom');
      if (r) {
        writeFileSync(file, await auditMetrics(r));
        utimesSync(file, new Date('2026-11-29T05:00:00Z'), new Date('2026-11-29T05:00:00Z'));
      }
      return parseLastAudit(execFileSync('sh', ['-c', lastAuditScript(file)], { encoding: 'utf8' }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it("is read from the textfile the agent's runs write: verdict, findings of every class, the file's time", async () => {
    expect(await readBack(report('leaks', ['ip-reservation-leaked', 'ip-reservation-leaked', 'stuck-terminating']))).toEqual({ verdict: 'leaks', findings: 3, at: '2026-11-29T05:00:00.000Z' });
    expect(await readBack(report('clean', []))).toEqual({ verdict: 'clean', findings: 0, at: '2026-11-29T05:00:00.000Z' });
    expect(await readBack(undefined)).toBeUndefined();
    expect(parseLastAudit('1795928400\nnot a gauge\n')).toBeUndefined();
  });

  it('goes with the facts to the preview: each node says it, and one line names the nodes whose audit was not clean', () => {
    const facts = parseFacts('n1', ['containerd'], `${OUT}\n@@node-maint-audit\n1795928400\nnode_maint_audit_verdict{node="n1",verdict="unverifiable"} 1\n`, new Date('2026-11-29T05:00:00Z'));
    expect(facts.lastAudit).toEqual({ verdict: 'unverifiable', findings: 0, at: '2026-11-29T05:00:00.000Z' });
    expect(describeLastAudit(undefined)).toBe('none by its agent yet');
    const seen = observedFromFacts('n1', facts, { containerd: '2' }, false, Date.parse(facts.at));
    expect(typeof seen === 'object' && describeLastAudit(seen.lastAudit)).toBe('could not verify (2026-11-29T05:00:00.000Z)');
    const clean = { verdict: 'clean' as const, findings: 0, at: 'T' };
    expect(summarizeLastAudits([['a', clean], ['b', { verdict: 'leaks', findings: 2, at: 'T' }], ['c', undefined], ['d', clean]])).toBe('the last audits their agents ran: 2 clean, 1 with findings (b), 0 could not verify, 1 none yet (c)');
  });
});

describe("a fleet node's run through its agent", () => {
  it("carries the fleet's run options as the MaintenanceRun's fields (what differs from the defaults), nothing about reaching the node", () => {
    const inputs = {
      node: 'n1',
      connection: { kind: 'agent' },
      targets: { containerd: '2', 'docker.io': '3' },
      reboot: { policy: 'if-required', timeoutSeconds: 900 },
      drain: { ignoreDaemonSets: true, deleteEmptyDirData: false, force: true, gracePeriodSeconds: -1, timeoutSeconds: 600, skipWaitForDeleteTimeoutSeconds: 0 },
      leaseNamespace: 'maint',
      allowNoRollback: true,
    } as NodeUpgradeInputs;
    const upgrade = agentUpgradeSpec(inputs);
    expect(upgrade).toEqual({
      targets: [{ package: 'containerd', version: '2' }, { package: 'docker.io', version: '3' }],
      reboot: 'if-required', timeouts: { rebootSeconds: 900 }, drain: { ignoreDaemonSets: true, force: true }, allowNoRollback: true,
    });
    const at = { kubeconfig: '/run/k', textfileDir: '/m', leaseNamespace: 'maint', smokeNamespace: 'smoke' };
    expect(runArguments({ nodeName: 'n1', requestedBy: 'stack', command: 'upgrade', output: 'json', upgrade }, at).args).toEqual([
      'n1', '--output', 'json', '--transport', 'local', '--kubeconfig', '/run/k', '--textfile-dir', '/m', '--lease-namespace', 'maint', '--smoke-namespace', 'smoke',
      '--to', 'containerd=2,docker.io=3', '--reboot-if-required', '--allow-no-rollback', '--ignore-daemonsets', '--force', '--reboot-timeout', '900s',
    ]);
  });
});
