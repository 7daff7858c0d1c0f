import { expect } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { auditNode, DRAIN_FLAGS, kubectlJson, upgradeNode, waitFor, type CliResult } from './bed.js';
import type { TestNode } from './pool.js';

// The fault matrix's vocabulary: a leased pool node under test, the upgrade run as an operator runs it, a kill at a
// step, fault switches, and what every case must end with.
export type Target = TestNode;

/** Where the bed's fault hooks look (testbed/packages/fault-hooks.sh, testbed/pool/kubelet-with-faults). */
export const FAULTS_DIR = '/run/node-maint-test-faults';

export const upgradeArgs = (t: Target, version: string, extra: string[] = []) => [t.name, '--to', `containerd=${version}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags, ...extra];

/** The run's flags with another kubeconfig (a proxy's in front of the apiserver). */
export const withKubeconfig = (args: string[], kubeconfig: string) => args.map((a, i) => (args[i - 1] === '--kubeconfig' ? kubeconfig : a));

/** The progress line that says a step starts: "[ 5/12] Tear down sandbox networks ...". */
export function stepLine(name: string): string {
  const i = STEPS.findIndex((s) => s.name === name);
  if (i < 0) throw new Error(`no step ${name}`);
  return `[${String(i + 1).padStart(2)}/${STEPS.length}] ${STEPS[i]!.title} ...`;
}

/** Runs an upgrade and SIGKILLs it when `line` appears on its stderr (and `then` has run, if given). */
export async function upgradeKilledAt(t: Target, version: string, line: string, extra: string[] = [], then?: () => Promise<void>): Promise<CliResult> {
  let fired = false;
  const result = await upgradeNode(upgradeArgs(t, version, extra), {
    onStderr: (text, kill) => {
      if (fired || !text.includes(line)) return;
      fired = true;
      void (then ?? (async () => undefined))().then(kill, kill);
    },
  });
  expect(fired, `never saw ${JSON.stringify(line)}:\n${result.stderr}`).toBe(true);
  expect(result.code, result.stderr).toBe(137);
  return result;
}

export const report = (r: CliResult) => {
  try {
    return JSON.parse(r.stdout);
  } catch {
    throw new Error(`no JSON report (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
};

export async function setFault(t: Target, name: string, content = ''): Promise<void> {
  await t.sh(`mkdir -p ${FAULTS_DIR} && printf '%s' '${content}' > ${FAULTS_DIR}/${name}`);
}

export async function clearFault(t: Target, name: string): Promise<void> {
  await t.sh(`rm -f ${FAULTS_DIR}/${name}`);
}

export async function lease(node: string): Promise<{ holder?: string; journal?: any }> {
  const l = await kubectlJson('get', 'lease', '-n', 'kube-system', `node-maint-${node}`).catch(() => undefined);
  const text = l?.metadata.annotations?.['node-maint.io/journal'];
  return { holder: l?.spec.holderIdentity ?? undefined, journal: text ? JSON.parse(text) : undefined };
}

/** The containerd package as dpkg records it: "VERSION hi " when held and installed. */
export const containerdStatus = async (t: Target) => (await t.sh("dpkg-query -W -f='${Version} ${db:Status-Abbrev}' containerd")).replace(/\n$/, '');

/** kubelet's process, to tell whether a run restarted it. */
export const kubeletPid = async (t: Target) => (await t.sh('systemctl show -p MainPID --value kubelet')).trim();

/**
 * What every fault case ends with: containerd at the expected version, dpkg sound (held again where it was held),
 * kubelet running, the node Ready and schedulable (unless it was cordoned before), the Lease released with the run
 * finished, and zero leaks by the audit. `afterRun`: the case's last run; when it ended 0 with its own audit clean
 * (its verify step audits after the uncordon), that audit stands for the audit CLI's.
 */
export async function expectServing(t: Target, version: string, options: { cordonedBefore?: boolean; afterRun?: CliResult } = {}): Promise<void> {
  expect(await containerdStatus(t)).toBe(`${version} ${t.held ? 'hi' : 'ii'} `);
  expect((await t.sh('systemctl is-active kubelet || true')).trim()).toBe('active');
  await waitFor(async () => {
    const node = await kubectlJson('get', 'node', t.name);
    const ready = node.status.conditions.find((c: any) => c.type === 'Ready')?.status === 'True';
    return ready && Boolean(node.spec.unschedulable) === Boolean(options.cordonedBefore);
  }, 120_000, `${t.name} Ready and ${options.cordonedBefore ? 'cordoned' : 'schedulable'}`);
  const l = await lease(t.name);
  expect(l.holder).toBeUndefined();
  expect(['completed', 'rolled-back', 'failed']).toContain(l.journal?.status ?? 'completed');
  const ran = options.afterRun ? report(options.afterRun) : undefined;
  if (ran?.exitCode === 0 && ran.audit?.verdict === 'clean' && ran.audit.findings === 0) return;
  let audit: CliResult | undefined;
  await waitFor(async () => (audit = await auditNode([t.name, '--output', 'json', ...t.flags])).code === 0, 90_000, `a clean audit of ${t.name}`).catch(() => {
    throw new Error(`audit of ${t.name} not clean: ${audit?.stdout.slice(0, 2000)}`);
  });
}


/** upgrade-runtime's rollback summary: the prior version reinstalled from the .deb the run kept before its install. */
export const reinstalledFromKept = (pkg: string, version: string) =>
  new RegExp(`^reinstalled ${pkg} ${escapeRe(version)} \\(from the kept /var/lib/node-maint/backups/[0-9a-f-]+/debs/${escapeRe(pkg)}_${escapeRe(version)}_amd64\\.deb\\)$`);
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\~]/g, '\\$&');
