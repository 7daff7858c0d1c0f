import { describe, expect, it } from 'vitest';
import { statusLabel } from '../../src/runbook/report.js';
import { STEPS } from '../../src/steps/index.js';
import { bed, upgradeNode } from './bed.js';
import { expectServing, kubeletPid, lease, report, stepLine, upgradeArgs, upgradeKilledAt } from './faults.js';
import { onLeasedNode } from './pool.js';

// SIGKILL of the runbook as each step starts (the eleven boundaries after preflight), in turn: each next process is the
// same command again, which resumes the run from the journal on the Lease, does the step the last one was killed at,
// and is killed as the one after starts; the last one finishes the run. Steps done are not done again; once kubelet
// is back (kills at steps 9-11), nothing of the node's disruption is repeated: no cordon, no kubelet stop, no
// teardown. One run a flavour, every boundary on each, on a node leased for the case.
const BOUNDARIES = STEPS.slice(1).map((s, i) => ({ step: s.name, at: i + 1 }));
const AFTER_KUBELET_IS_BACK = STEPS.findIndex((s) => s.name === 'start-kubelet') + 1;

/** Each step before index `upTo` is said, where it ends in this process's output, done earlier (or nothing to do). */
function expectNotDoneAgain(stderr: string, upTo: number, what: string): void {
  for (const [i, s] of STEPS.entries()) {
    if (i === 0 || i >= upTo) continue;
    // "[ 2/12] Cordon ..." as it starts, "[ 2/12] done earlier, not again in 0.0s: cordoned" as it ends.
    const prefix = stepLine(s.name).slice(0, stepLine(s.name).indexOf(']') + 2);
    const end = stderr.split('\n').find((l) => l.startsWith(prefix) && !l.endsWith(' ...'));
    expect([`${prefix}done earlier, not again`, `${prefix}${statusLabel(s.name, 'nothing-to-do')}`], `${s.name} ${what}:\n${stderr}`).toContain(end?.replace(/ in [\d.]+s: .*$/, ''));
  }
}

describe('SIGKILL at each step boundary, then the same command again', () => {
  it.concurrent.each(['containerd', 'docker'] as const)('on %s, killed as each step starts in turn: every next run resumes, does nothing twice, and the last one finishes', (flavour) =>
    onLeasedNode(flavour, async (t) => {
      const version = bed().containerd.new;
      let kubeletBack: string | undefined;
      for (const { step, at } of BOUNDARIES) {
        const killed = await upgradeKilledAt(t, version, stepLine(step));
        expect((await lease(t.name)).journal.status, `killed as ${step} starts`).toBe('running');
        if (at > 1) {
          expect(killed.stderr).toContain('resuming the run on');
          // The step the last process was killed at is this one's to do; each before it was done earlier.
          expectNotDoneAgain(killed.stderr, at - 1, `in the run killed as ${step} starts`);
        }
        if (at === AFTER_KUBELET_IS_BACK) kubeletBack = await kubeletPid(t);
      }
      const again = await upgradeNode(upgradeArgs(t, version));
      expect(again.code, again.stderr).toBe(0);
      const r = report(again);
      expect(r).toMatchObject({ result: 'upgraded', mode: 'resume' });
      expect(again.stderr).toContain('resuming the run on');
      for (const s of r.steps.slice(1, BOUNDARIES.length)) expect(['done-earlier', 'nothing-to-do'], s.name).toContain(s.status);
      // Kubelet was back and pods may be returning: nothing of the node's disruption was repeated since.
      expect(await kubeletPid(t)).toBe(kubeletBack);
      for (const name of ['cordon', 'drain', 'stop-kubelet', 'teardown-sandboxes', 'clear-state', 'upgrade-runtime', 'start-kubelet']) {
        expect(r.steps.find((s: any) => s.name === name).status, name).toBe('done-earlier');
      }
      await expectServing(t, version);
    })(),
  );

  it.concurrent('the runtime put back behind the journal (a re-imaged host) before the proof: the re-run does not call it upgraded, it rolls back',
    onLeasedNode('containerd', async (t) => {
      const { old, new: version } = bed().containerd;
      await upgradeKilledAt(t, version, stepLine('prove-node'));
      await t.sh(`systemctl stop containerd && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades --allow-change-held-packages containerd='${old}' >/dev/null && apt-mark hold containerd >/dev/null && systemctl start containerd`);
      const again = await upgradeNode(upgradeArgs(t, version));
      expect(again.code, again.stderr).toBe(11);
      const r = report(again);
      expect(r.steps.find((s: any) => s.name === 'prove-node').error).toContain(`installed versions differ from the targets: containerd ${old} (want ${version})`);
      await expectServing(t, old);
    }),
  );
});
