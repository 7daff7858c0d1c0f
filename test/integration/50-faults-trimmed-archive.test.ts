import { describe, expect, it } from 'vitest';
import { bed, kubectlJson, upgradeNode, type CliResult } from './bed.js';
import { containerdStatus, expectServing, reinstalledFromKept, report, stepLine, upgradeArgs, type Target } from './faults.js';
import { onLeasedNode } from './pool.js';

// Debian's and Ubuntu's archives keep only the newest point release: once the version a node runs is gone from them,
// a rollback that asks apt for it fails with the runtime stopped. On containerd nodes, each case on a node of its own,
// whose apt source is made to drop the old containerd (a node-local copy of the bed's repository without it).
const OLD = () => bed().containerd.old;
const NEW = () => bed().containerd.new;
const SOURCE = 'deb [trusted=yes] file:/srv/debs ./';

/** Node script: the node's only apt source becomes the bed's repository without containerd OLD. */
const trimArchive = () => `set -e
rm -rf /srv/nm-test-trimmed; mkdir -p /srv/nm-test-trimmed; cd /srv/nm-test-trimmed
for f in /srv/debs/*.deb; do case "$(basename "$f")" in 'containerd_${OLD()}_'*) ;; *) ln -s "$f" . ;; esac; done
apt-ftparchive packages . > Packages 2>/dev/null
echo 'deb [trusted=yes] file:/srv/nm-test-trimmed ./' > /etc/apt/sources.list
apt-get update -qq -o DPkg::Lock::Timeout=120 >/dev/null`;
const restoreArchive = (t: Target) =>
  t.sh(`echo '${SOURCE}' > /etc/apt/sources.list; rm -rf /srv/nm-test-* /etc/apt/sources.list.d/nm-test-*.list; apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null`);
const onNode = (fn: (t: Target) => Promise<void>) =>
  onLeasedNode('containerd', async (t) => {
    try {
      await fn(t);
    } finally {
      await restoreArchive(t);
    }
  });
const offered = async (t: Target) => (await t.sh(`apt-cache madison containerd | awk -F'|' '{gsub(/ /,"",$2); print $2}'`)).trim().split('\n');
/** A run that completed or rolled back can never be rolled back again: the .debs it kept are deleted from the node. */
async function expectKeptDebsDeleted(t: Target, result: CliResult): Promise<void> {
  const dir = `/var/lib/node-maint/backups/${report(result).runId}/debs`;
  expect(result.stderr).toContain(`deleted the .debs kept for a rollback (${dir})`);
  expect((await t.sh(`[ -e ${dir} ] && echo present || echo gone`)).trim()).toBe('gone');
}
const schedulable = async (t: Target) => !(await kubectlJson('get', 'node', t.name)).spec.unschedulable;

describe('a rollback whose prior version the archive no longer has', () => {
  it.concurrent('the archive drops it during the upgrade, then a failure after the install: rolled back from the kept .deb, held again', onNode(async (t) => {
    await t.sh(`cat > /usr/local/sbin/nm-test-trim-archive <<'SH'\n${trimArchive()}\nSH\nchmod +x /usr/local/sbin/nm-test-trim-archive`);
    const result = await upgradeNode([...upgradeArgs(t, NEW()), '--hook-after-upgrade', '/usr/local/sbin/nm-test-trim-archive && echo "the canary check failed" >&2 && exit 1']);
    expect(result.code, result.stderr).toBe(11);
    expect(await offered(t)).not.toContain(OLD());
    expect(result.stderr).toMatch(new RegExp(`kept containerd ${OLD().replace(/[+.~]/g, '\\$&')} for a rollback: /var/lib/node-maint/backups/\\S+/debs/containerd_`));
    const undone = report(result).rollback.find((u: any) => u.step === 'upgrade-runtime');
    expect(undone.summary).toMatch(reinstalledFromKept('containerd', OLD()));
    await expectServing(t, OLD());
    await expectKeptDebsDeleted(t, result);
  }));

  it.concurrent('already gone before the run: refused in preflight (exit 10) naming it; --allow-no-rollback goes on, said in the plan', onNode(async (t) => {
    await t.sh(trimArchive());
    const refused = await upgradeNode(upgradeArgs(t, NEW()));
    expect(refused.code, refused.stderr).toBe(10);
    expect(report(refused).error.message).toContain(`containerd ${OLD()}, installed now, is no longer in ${t.name}'s package sources nor in apt's cache: a rollback would have nothing to install`);
    expect(refused.stderr).not.toContain(stepLine('cordon'));
    expect(await schedulable(t)).toBe(true);
    const allowed = await upgradeNode(upgradeArgs(t, NEW(), ['--allow-no-rollback']));
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(report(allowed).steps.find((s: any) => s.name === 'preflight').summary).toContain(`no rollback path for containerd ${OLD()} (--allow-no-rollback)`);
    expect(await containerdStatus(t)).toBe(`${NEW()} hi `);
    await expectKeptDebsDeleted(t, allowed);
  }));
});

describe('an install that would remove a package', () => {
  it.concurrent('is refused in preflight (exit 10), naming what apt would remove; nothing changes', onNode(async (t) => {
    // Debian's new containerd repacked as a version that conflicts with runc, in a second node-local source.
    const version = `${NEW()}+nmtest2`;
    await t.sh(`set -e
      rm -rf /srv/nm-test-conflict /tmp/nm-test-conflict; mkdir -p /srv/nm-test-conflict
      dpkg-deb -R /srv/debs/containerd_${NEW()}_amd64.deb /tmp/nm-test-conflict
      sed -i -e 's/^Version: .*/Version: ${version}/' -e '/^Depends:/{s/runc[^,]*, *//;s/, *runc[^,]*$//}' -e '/^Description:/i Conflicts: runc' /tmp/nm-test-conflict/DEBIAN/control
      dpkg-deb -b -Znone /tmp/nm-test-conflict /srv/nm-test-conflict/containerd_${version}_amd64.deb >/dev/null; rm -rf /tmp/nm-test-conflict
      cd /srv/nm-test-conflict && apt-ftparchive packages . > Packages 2>/dev/null
      echo 'deb [trusted=yes] file:/srv/nm-test-conflict ./' > /etc/apt/sources.list.d/nm-test-conflict.list
      apt-get update -qq -o DPkg::Lock::Timeout=120 >/dev/null`);
    const runc = (await t.sh("dpkg-query -W -f='${Version}' runc")).trim();
    const result = await upgradeNode(upgradeArgs(t, version));
    expect(result.code, result.stderr).toBe(10);
    expect(report(result).error.message).toContain(`installing containerd ${version} on ${t.name} would remove runc ${runc} (apt-get -s): node-maint never removes packages`);
    expect(result.stderr).not.toContain(stepLine('cordon'));
    expect(await containerdStatus(t)).toBe(`${OLD()} hi `);
    expect((await t.sh("dpkg-query -W -f='${Version}' runc")).trim()).toBe(runc);
  }));
});
