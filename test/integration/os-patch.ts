import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestNode } from './pool.js';

/** A package that is not the runtime's, at two versions, in an apt source of the test's own on the node. */
export const OS_PATCH = 'node-maint-os-patch';
/** The source's Label (its Release file), which apt-get -s names beside each version it would install. */
export const OS_PATCH_ORIGIN = 'node-maint-test-patches';
export const osPatch = async (t: TestNode) => (await t.sh(`dpkg-query -W -f '\${Version}' ${OS_PATCH} 2>/dev/null || true`)).trim();

/** Builds the package's two versions here (dpkg-deb, dpkg-scanpackages), serves them to the node, installs 1.0-1; all gone after. */
export async function withOsPatchSource(t: TestNode, body: () => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'node-maint-os-patch-'));
  for (const version of ['1.0-1', '1.0-2']) {
    const pkg = join(dir, `pkg-${version}`);
    mkdirSync(join(pkg, 'DEBIAN'), { recursive: true });
    mkdirSync(join(pkg, 'usr/share', OS_PATCH), { recursive: true });
    writeFileSync(join(pkg, 'usr/share', OS_PATCH, 'version'), `${version}\n`);
    writeFileSync(join(pkg, 'DEBIAN/control'), `Package: ${OS_PATCH}\nVersion: ${version}\nArchitecture: all\nMaintainer: node-maint test bed <testbed@localhost>\nDescription: an OS patch of the test bed (not the runtime's)\n`);
    await promisify(execFile)('dpkg-deb', ['-b', '-Znone', pkg, join(dir, `${OS_PATCH}_${version}_all.deb`)]);
    rmSync(pkg, { recursive: true });
  }
  const { stdout } = await promisify(execFile)('dpkg-scanpackages', ['--multiversion', '.', '/dev/null'], { cwd: dir });
  writeFileSync(join(dir, 'Packages'), stdout);
  // Unsigned ([trusted=yes] below): its Label is what --pending-origin and a fleet's pendingUpgrades.origin pick.
  writeFileSync(join(dir, 'Release'), `Origin: ${OS_PATCH_ORIGIN}\nLabel: ${OS_PATCH_ORIGIN}\nSuite: patches\n`);
  await t.sh('rm -rf /srv/os-patch');
  await t.put(dir, '/srv/os-patch');
  await t.sh(`echo 'deb [trusted=yes] file:/srv/os-patch ./' > /etc/apt/sources.list.d/os-patch.list && apt-get update -qq && apt-get install -y -qq ${OS_PATCH}=1.0-1 >/dev/null`);
  try {
    await body();
  } finally {
    await t.sh(`dpkg --purge ${OS_PATCH} >/dev/null 2>&1; rm -rf /etc/apt/sources.list.d/os-patch.list /srv/os-patch; apt-get update -qq`);
    rmSync(dir, { recursive: true, force: true });
  }
}
