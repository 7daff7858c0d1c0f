import { describe, expect, it } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { bed, upgradeNode } from './bed.js';
import { expectServing, kubeletPid, lease, report, stepLine, upgradeArgs, upgradeKilledAt } from './faults.js';
import { onLeasedNode } from './pool.js';

// SIGKILL of the runbook as each step starts (the ten boundaries after preflight), then the same command again: the
// journal on the Lease makes the second process finish the first one's run. Steps done are not done again; after a
// kill once kubelet is back (steps 9-11), the re-run disrupts nothing: no cordon, no kubelet stop, no teardown. Each
// case on a node of its own, leased for the case, containerd and docker in turn.
const BOUNDARIES = STEPS.slice(1).map((s, i) => ({ step: s.name, at: i + 1 }));
const AFTER_KUBELET_IS_BACK = STEPS.findIndex((s) => s.name === 'start-kubelet') + 1;

describe('SIGKILL at each step boundary, then the same command again', () => {
  it.concurrent.each(BOUNDARIES)('killed as $step starts: the re-run finishes the run, doing nothing twice', ({ step, at }) =>
    onLeasedNode(at % 2 ? 'containerd' : 'docker', async (t) => {
      const version = bed().containerd.new;
      await upgradeKilledAt(t, version, stepLine(step));
      const killed = await lease(t.name);
      expect(killed.journal.status).toBe('running');
      const pidBefore = await kubeletPid(t);

      const again = await upgradeNode(upgradeArgs(t, version));
      expect(again.code, again.stderr).toBe(0);
      const r = report(again);
      expect(r.result).toBe('upgraded');
      expect(r.mode).toBe('resume');
      // Every step the killed process finished is reported as done earlier, and none of them acted again.
      for (const s of r.steps.slice(1, at)) {
        expect(['done-earlier', 'nothing-to-do'], `${s.name} after a kill at ${step}`).toContain(s.status);
      }
      if (at >= AFTER_KUBELET_IS_BACK) {
        // Kubelet was back and pods may be returning: nothing of the node's disruption is repeated.
        expect(await kubeletPid(t)).toBe(pidBefore);
        for (const name of ['cordon', 'drain', 'stop-kubelet', 'teardown-sandboxes', 'clear-state', 'upgrade-runtime', 'start-kubelet']) {
          expect(r.steps.find((s: any) => s.name === name).status, name).toBe('done-earlier');
        }
      }
      expect(again.stderr).toContain('resuming the run on');
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
