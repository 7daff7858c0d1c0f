import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditNode, bed, kubectlJson, sh, upgradeNode } from './bed.js';
import { useNodes } from './pool.js';
import { firingAlerts, query, waitForAlert, waitForValue } from './prometheus.js';

// The audit and the runbook write node-exporter textfiles on a docker node, into Debian's textfile directory, which
// the bed's node-exporter serves (the same directory, mounted on every pool node); the bed's Prometheus scrapes it
// and evaluates the project's rules (src/metrics/node-maint.rules.yml).
const DEAD_ID = 'dd'.repeat(32);
const [t] = useNodes('docker', 'resource:calico', 'resource:textfiles');
const node = () => t.name;
const access = () => t.flags;
const textfile = () => ['--textfile-dir', bed().textfileDir];
const leaked = (network: string) => `node_maint_ip_leaked{node="${node()}",network="${network}"}`;
let planted = '';

describe('metrics of the audit and the runbook, scraped by a real Prometheus', () => {
  beforeAll(async () => {
    await sh(`rm -f ${bed().textfileDir}/node_maint_*.prom`);
    // A reservation of a container that never existed, at the last address of the node's /25.
    const cidr: string = (await kubectlJson('get', 'node', node())).spec.podCIDR;
    const [a, b, c, d] = cidr.split('/')[0]!.split('.').map(Number);
    planted = `/var/lib/cni/networks/kubenet/${a}.${b}.${c}.${d! + 126}`;
  });

  afterAll(async () => {
    await t.sh(`rm -f ${planted}`);
    await sh(`rm -f ${bed().textfileDir}/node_maint_*.prom`);
  });

  it('audit-node --output prometheus prints the audit as gauges, and --textfile-dir serves them to Prometheus', async () => {
    const printed = await auditNode([node(), '--output', 'prometheus', ...textfile(), ...access()]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(new RegExp(`^node_maint_audit_verdict\\{node="${node()}",verdict="clean"\\} 1$`, 'm'));
    expect(printed.stdout).toMatch(new RegExp(`^node_maint_ip_range_usable\\{node="${node()}",network="kubenet",range="10\\.\\d+\\.\\d+\\.\\d+/25"\\} 125$`, 'm'));
    expect(printed.stdout).toMatch(new RegExp(`^node_maint_sandboxes\\{node="${node()}",state="ready"\\} [1-9]\\d*$`, 'm'));
    expect(printed.stdout).toMatch(new RegExp(`^node_maint_pods_stuck_terminating\\{node="${node()}"\\} 0$`, 'm'));
    await waitForValue(`node_maint_audit_verdict{node="${node()}",verdict="clean"}`, 1);
    await waitForValue(leaked('kubenet'), 0);
    // The series carry node-exporter's instance, as every textfile metric does.
    expect(Object.keys(await query(leaked('kubenet')))[0]).toContain('"instance":"127.0.0.1:9100"');
  });

  it('a leaked IP shows in Prometheus and fires NodeMaintLeakedIPs; after the reclaim it is 0 and the alert resolves', async () => {
    await t.sh(`printf '${DEAD_ID}\\r\\neth0' > ${planted}`);
    const found = await auditNode([node(), '--output', 'json', ...textfile(), ...access()]);
    expect(found.code, found.stderr).toBe(13);
    await waitForValue(leaked('kubenet'), 1);
    await waitForValue(`node_maint_audit_findings{node="${node()}",class="ip-reservation-leaked"}`, 1);
    await waitForAlert('NodeMaintLeakedIPs', true);

    const reclaimed = await auditNode([node(), '--reclaim', '--grace', '0', '--interval', '1', ...textfile(), ...access()]);
    expect(reclaimed.code, reclaimed.stderr + reclaimed.stdout).toBe(0);
    await waitForValue(leaked('kubenet'), 0);
    await waitForAlert('NodeMaintLeakedIPs', false);
  });

  it('upgrade-node --textfile-dir: the last run\'s result, exit code and step durations; a failed run fires NodeMaintLastRunFailed', async () => {
    const installed = (await t.sh("dpkg-query -W -f='${Version}' containerd")).trim();
    const done = await upgradeNode([node(), '--to', `containerd=${installed}`, ...textfile(), ...access()]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain(`metrics written to ${bed().textfileDir}/node_maint_run.prom`);
    await waitForValue(`node_maint_last_run_info{node="${node()}",result="nothing-to-do"}`, 1);
    await waitForValue(`node_maint_last_run_success{node="${node()}"}`, 1);
    expect(Object.keys(await query(`node_maint_last_run_step_duration_seconds{node="${node()}"}`)).length).toBeGreaterThanOrEqual(1);

    // A version no repository has: refused in preflight (exit 10), nothing changed; the metrics say so.
    const refused = await upgradeNode([node(), '--to', 'containerd=9.9.9-1', ...textfile(), ...access()]);
    expect(refused.code, refused.stderr).toBe(10);
    await waitForValue(`node_maint_last_run_exit_code{node="${node()}"}`, 10);
    await waitForValue(`count(node_maint_last_run_step_duration_seconds{node="${node()}",step="preflight",status="failed"})`, 1);
    await waitForAlert('NodeMaintLastRunFailed', true);
    expect(await firingAlerts()).not.toContain('NodeMaintLeakedIPs');
  });

  it('a textfile directory with shell metacharacters is refused before anything runs', async () => {
    const result = await auditNode([node(), '--textfile-dir', '/tmp/x;touch /tmp/pwned', ...access()]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('invalid --textfile-dir');
    expect(await t.sh('test -e /tmp/pwned && echo yes || echo no')).toContain('no');
    expect(await sh('test -e /tmp/pwned && echo yes || echo no')).toContain('no');
  });
});
