import { describe, expect, it } from 'vitest';
import { bed, kubectl, kubectlJson, nodeMaintEvents, upgradeNode } from './bed.js';
import { expectServing, lease, report, setFault, upgradeArgs, upgradeKilledAt, type Target, reinstalledFromKept } from './faults.js';
import { pinnedDeployment } from './fixtures.js';
import { onLeasedNode, useNamespace } from './pool.js';

// Failures before the point of no return on docker nodes (cri-dockerd, kubenet, real apt, runtime packages held):
// each is rolled back from the journal to the prior versions, held again, kubelet running, uncordoned. Each case on a
// docker node of its own, leased for the case, from a reset node. (The proof's check of the runtime version
// the node reports: test 48.)
const ns = useNamespace();
/** Runs a case on a docker node of its own, from a reset node with a pod to drain. */
const onNode = (fn: (t: Target) => Promise<void>) =>
  onLeasedNode('docker', async (t) => {
    await kubectl('-n', ns.name, 'delete', 'deployment', `app-${t.name}`, '--ignore-not-found', '--wait=false');
    await pinnedDeployment(ns.name, `app-${t.name}`, t.name, 1);
    await fn(t);
  });
const steps = (r: any) => Object.fromEntries(r.steps.map((s: any) => [s.name, s.status]));
const undone = (r: any) => r.rollback.map((x: any) => [x.step, x.status]);
// What the rollback of a run that failed in upgrade-runtime undoes, newest first.
const UNDO_FROM_UPGRADE = ['upgrade-runtime', 'clear-state', 'teardown-sandboxes', 'stop-kubelet', 'drain', 'cordon'];

/**
 * A package apt must change alongside the new containerd, at two versions in an apt source of the node's own: its
 * installed v1 breaks containerd's new version, so apt's plan for it upgrades it to v2 (as a newer containerd pulls a
 * newer runc). Built on the node with dpkg-deb, its Packages index written by hand (the node has no dpkg-dev).
 */
async function dependencyAlongside(t: Target): Promise<string> {
  const name = 'node-maint-test-dep';
  await t.sh(`set -e; d=/srv/node-maint-test-dep; rm -rf $d; mkdir -p $d
    for v in 1 2; do
      p=$(mktemp -d); mkdir -p $p/DEBIAN
      printf 'Package: ${name}\nVersion: %s\nArchitecture: all\nMaintainer: test <t@localhost>\nDescription: a dependency changed alongside containerd\n' $v > $p/DEBIAN/control
      [ $v = 1 ] && echo 'Breaks: containerd (>= ${bed().containerd.new})' >> $p/DEBIAN/control
      dpkg-deb -b -Zgzip $p $d/${name}_\${v}_all.deb >/dev/null; rm -rf $p
    done
    cd $d; for f in *.deb; do dpkg-deb -f $f; printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n\n' $f $(stat -c %s $f) $(sha256sum $f | cut -d' ' -f1); done > Packages
    echo 'deb [trusted=yes] file:/srv/node-maint-test-dep ./' > /etc/apt/sources.list.d/node-maint-test-dep.list
    apt-get update -qq -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/node-maint-test-dep.list -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${name}=1 >/dev/null`);
  return name;
}

describe('failures before the point of no return are rolled back', () => {
  it.concurrent('a hook after the upgrade that fails, with a package apt upgraded alongside the target (a newer dependency): rolled back, the hook named with its output, the package kept and put back with it; exit 11', onNode(async (t) => {
    const dep = await dependencyAlongside(t);
    try {
      const result = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--hook-after-upgrade', `echo "${dep} $(dpkg-query -W -f='\${Version}' ${dep}) after the upgrade" >&2; exit 3`]));
      expect(result.code, result.stderr).toBe(11);
      const r = report(result);
      expect(r.steps[0].summary).toContain(`kept for a rollback too: ${dep} 1`);
      // The hook saw it upgraded alongside, then the rollback put it back.
      expect(steps(r)['upgrade-runtime']).toBe('failed');
      expect(r.steps.find((x: any) => x.name === 'upgrade-runtime').error).toMatch(new RegExp(`hook --hook-after-upgrade failed on .* \\(exit 3\\): ${dep} 2 after the upgrade`));
      expect(undone(r).map(([s]: [string]) => s)).toEqual(UNDO_FROM_UPGRADE);
      expect(r.rollback.find((x: any) => x.step === 'upgrade-runtime').summary).toMatch(new RegExp(`^reinstalled containerd ${bed().containerd.old.replace(/[.+~]/g, '\\$&')}, ${dep} 1 \\(from the kept `));
      expect((await t.sh(`dpkg-query -W -f='\${Version}' ${dep}`)).trim()).toBe('1');
      await expectServing(t, bed().containerd.old);
    } finally {
      await t.sh(`DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ${dep} >/dev/null 2>&1; rm -rf /srv/node-maint-test-dep /etc/apt/sources.list.d/node-maint-test-dep.list; apt-get update -qq >/dev/null 2>&1 || true`);
    }
  }));

  it.concurrent('the package install failing mid-unpack (preinst): the old version stays, held; exit 11', onNode(async (t) => {
    await setFault(t, 'preinst-fail');
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.faulty));
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    expect(r.result).toBe('rolled-back');
    expect(r.pointOfNoReturn).toBe(false);
    expect(steps(r)['upgrade-runtime']).toBe('failed');
    expect(r.steps.find((s: any) => s.name === 'upgrade-runtime').error).toContain('preinst fails on purpose');
    expect(undone(r).map(([s]: [string]) => s)).toEqual(UNDO_FROM_UPGRADE);
    expect(undone(r).every(([, status]: [string, string]) => status === 'done')).toBe(true);
    await expectServing(t, bed().containerd.old);
  }));

  it.concurrent('the new version half-configured (postinst fails), killed during its rollback: the same command finishes the rollback, the prior version installed over it, held; exit 11', onNode(async (t) => {
    await setFault(t, 'postinst-fail');
    await upgradeKilledAt(t, bed().containerd.faulty, 'rollback upgrade-runtime: start');
    expect((await lease(t.name)).journal.status).toBe('rolling-back');
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.faulty));
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    expect(r.mode).toBe('rollback');
    expect(result.stderr).toContain('rolling back the unfinished run on');
    expect(undone(r).map(([s]: [string]) => s)).toEqual(UNDO_FROM_UPGRADE);
    expect((await lease(t.name)).journal.status).toBe('rolled-back');
    expect(r.rollback.find((x: any) => x.step === 'upgrade-runtime').summary).toMatch(reinstalledFromKept('containerd', bed().containerd.old));
    await expectServing(t, bed().containerd.old);
  }));

  it.concurrent('kubelet failing to start after the upgrade: rolled back to the runtime it starts on', onNode(async (t) => {
    await setFault(t, 'kubelet-refuses-containerd', bed().containerd.faulty);
    // systemd restarts the failing kubelet every 2 s (Restart=always): between tries it is "activating", not active. The
    // rollback must stop it anyway, or systemd starts it during the reinstall and the rollback's wait would take that
    // kubelet's unchanged Ready (posted before the rollback started it) as stale until its 5-minute status report.
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.faulty, ['--ready-timeout', '60s']));
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    expect(steps(r)['start-kubelet']).toBe('failed');
    expect(undone(r).map(([s]: [string]) => s)).toEqual(['start-kubelet', ...UNDO_FROM_UPGRADE]);
    expect(r.rollback.find((u: any) => u.step === 'start-kubelet').summary).toMatch(/^kubelet stopped for the runtime rollback/);
    await expectServing(t, bed().containerd.old);
    // The node says so: labelled rolled-back, and its Events tell the run from start to rollback.
    expect((await kubectlJson('get', 'node', t.name)).metadata.labels['node-maint.io/state']).toBe('rolled-back');
    const events = await nodeMaintEvents(t.name, r.runId);
    expect(events.map((e) => e.split(':')[0])).toEqual(['MaintenanceStarted', 'Drained', 'RuntimeUpgraded', 'RolledBack']);
    expect(events.at(-1)).toContain(`rolled back to containerd=${bed().containerd.old}`);
  }));

  it.concurrent('the smoke pod getting no IP before uncordon (its range full): rolled back, never uncordoned on the new runtime', onNode(async (t) => {
    const node = await kubectlJson('get', 'node', t.name);
    const [base] = node.spec.podCIDR.split('/');
    const prefix = base.split('.').slice(0, 3).join('.');
    const first = Number(base.split('.')[3]);
    // Every free address of the /25 reserved for a container that does not exist: host-local has none to give. Filled
    // by the run's own after-upgrade hook, so before kubelet starts and before any pod can take an address.
    const fill = `mkdir -p /var/lib/cni/networks/kubenet && cd /var/lib/cni/networks/kubenet && for i in $(seq ${first + 2} ${first + 126}); do [ -e ${prefix}.$i ] || printf 'filler\\r\\neth0' > ${prefix}.$i; done`;
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new, ['--smoke-timeout', '20s', '--hook-after-upgrade', fill]));
    await t.sh(`grep -l '^filler' /var/lib/cni/networks/kubenet/* | xargs -r rm -f`);
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    expect(r.pointOfNoReturn).toBe(false);
    expect(steps(r)['prove-node']).toBe('failed');
    expect(steps(r).uncordon).toBe('not-run');
    expect(r.steps.find((s: any) => s.name === 'prove-node').error).toMatch(/smoke pod .* to get a sandbox and an IP.*no IP addresses available/s);
    expect(undone(r)[0]).toEqual(['prove-node', 'done']);
    await expectServing(t, bed().containerd.old);
  }));
});
