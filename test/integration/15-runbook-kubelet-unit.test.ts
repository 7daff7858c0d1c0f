import { afterAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, kubectl, kubectlJson, upgradeNode, waitFor } from './bed.js';
import { report, stepLine } from './faults.js';
import { useNodes } from './pool.js';
import { containerdOn } from './pulumi.js';

// kubelet as production nodes may run it: under a unit of another name (a snap's snap.kubelet.daemon, a site's own
// kubelet-custom), or started by hand outside any unit. The unit is read from kubelet's cgroup, not assumed.
const [t] = useNodes('any');
const CUSTOM = '/etc/systemd/system/kubelet-custom.service';
const isActive = async (unit: string) => (await t.sh(`systemctl is-active ${unit} || true`)).trim();
const readyAfter = async (since: number) =>
  waitFor(async () => {
    const ready = (await kubectlJson('get', 'node', t.name)).status.conditions.find((c: any) => c.type === 'Ready');
    return ready?.status === 'True' && Date.parse(ready.lastHeartbeatTime) >= since;
  }, 120_000, `${t.name} Ready`);
const nodeClock = async () => Number((await t.sh('date +%s')).trim()) * 1000;

afterAll(async () => {
  await t.sh(`systemctl stop kubelet-custom kubelet-x 2>/dev/null; rm -f ${CUSTOM}; systemctl daemon-reload; systemctl start kubelet`);
});

describe('kubelet under a unit of another name', () => {
  it('is stopped and started through that unit, and the upgrade goes through; the node, cordoned before the run, stays cordoned after it', async () => {
    // The bed's kubelet unit, as a unit of another name; kubelet.service itself left stopped (and loaded).
    await t.sh(`systemctl cat kubelet | grep -v '^# /' > ${CUSTOM} && systemctl daemon-reload && systemctl stop kubelet && systemctl start kubelet-custom`);
    await readyAfter(await nodeClock());
    await kubectl('cordon', t.name);
    try {
      const result = await upgradeNode([t.name, '--to', `containerd=${bed().containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
      expect(result.code, result.stderr).toBe(0);
      const steps = report(result).steps as Array<{ name: string; status: string; summary: string }>;
      expect(steps.find((s) => s.name === 'preflight')!.summary).toContain('kubelet runs as kubelet-custom.service');
      expect(steps.find((s) => s.name === 'stop-kubelet')!.summary).toBe('kubelet stopped');
      expect(steps.find((s) => s.name === 'cordon')!.status).toBe('nothing-to-do');
      expect(steps.find((s) => s.name === 'uncordon')!.summary).toMatch(/was cordoned before the run: stays cordoned/);
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBe(true);
      expect(await containerdOn(t)).toBe(bed().containerd.new);
      expect(await isActive('kubelet-custom')).toBe('active');
      expect(await isActive('kubelet')).toBe('inactive');
    } finally {
      // Tests put back what they change: the node goes back schedulable.
      await kubectl('uncordon', t.name);
    }
  });
});

describe('kubelet outside any unit', () => {
  it('is refused in preflight (exit 10), naming its PID, before anything changes', async () => {
    await t.sh(`systemctl stop kubelet-custom kubelet`);
    // Started by hand, in no service's cgroup. The node still shows Ready from before (the refusal comes first anyway).
    const pid = (await t.sh(`setsid /usr/local/lib/node-maint-testbed/kubelet-with-faults --config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/testbed/kubeconfig </dev/null >/var/log/kubelet-by-hand.log 2>&1 & echo $!`)).trim();
    try {
      await waitFor(async () => (await t.sh(`pidof kubelet || true`)).trim() === pid, 10_000, 'kubelet started by hand');
      const before = await containerdOn(t);
      const result = await upgradeNode([t.name, '--to', `containerd=${bed().containerd.new === before ? bed().containerd.old : bed().containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toMatch(new RegExp(`kubelet runs on ${t.name} \\(PID ${pid}\\) outside any systemd service`));
      expect(result.stderr).not.toContain(stepLine('cordon'));
      expect((await kubectlJson('get', 'node', t.name)).spec.unschedulable).toBeUndefined();
      expect(await containerdOn(t)).toBe(before);
    } finally {
      await t.sh(`kill ${pid}; for _ in $(seq 50); do kill -0 ${pid} 2>/dev/null || break; sleep 0.2; done`);
    }
  });
});

describe('kubelet as a transient unit (systemd-run)', () => {
  it('is refused in preflight (exit 10), naming the unit: stopped, nothing could start it again', async () => {
    await t.sh('systemctl stop kubelet-custom kubelet 2>/dev/null; true');
    await t.sh('systemd-run --unit kubelet-x /usr/local/lib/node-maint-testbed/kubelet-with-faults --config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/testbed/kubeconfig >/dev/null 2>&1');
    try {
      await waitFor(async () => (await isActive('kubelet-x')) === 'active' && (await t.sh('pidof kubelet || true')).trim() !== '', 20_000, 'kubelet as kubelet-x.service');
      const before = await containerdOn(t);
      const result = await upgradeNode([t.name, '--to', `containerd=${bed().containerd.new === before ? bed().containerd.old : bed().containerd.new}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
      expect(result.code, result.stderr).toBe(10);
      expect(report(result).error.message).toContain(`kubelet runs on ${t.name} as the transient unit kubelet-x.service (systemd-run: no unit file)`);
      expect(result.stderr).not.toContain(stepLine('cordon'));
      expect(await isActive('kubelet-x')).toBe('active');
      expect(await containerdOn(t)).toBe(before);
    } finally {
      await t.sh('systemctl stop kubelet-x 2>/dev/null; systemctl reset-failed kubelet-x 2>/dev/null; systemctl start kubelet');
    }
  });
});
