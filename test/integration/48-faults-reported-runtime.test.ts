import { beforeEach, describe, expect, it } from 'vitest';
import { bed, kubectl, upgradeNode } from './bed.js';
import { expectServing, report, setFault, stepLine, upgradeArgs } from './faults.js';
import { useNodes } from './pool.js';

// The proof before uncordon checks the runtime version kubelet reports for the node (nodeInfo.containerRuntimeVersion).
// A test cannot give a real kubelet another runtime version (the bed has one containerd release), so it writes the
// report once kubelet has posted its status after the upgrade, as a kubelet still attached to another containerd would
// send it; kubelet's next status sync is minutes away (--node-status-update-frequency=3m, through kubelet-with-faults).
describe('the runtime version the node reports after the upgrade', () => {
  const [t] = useNodes('containerd');
  beforeEach(async () => {
    await t.reset();
    await setFault(t, 'kubelet-extra-args', '--node-status-update-frequency=3m');
  });

  /** Writes the node's reported runtime as the proof starts; what the run said and whether it was written. */
  async function upgradeReporting(version: string) {
    let written: Promise<string> | undefined;
    const result = await upgradeNode(upgradeArgs(t, bed().containerd.new), {
      onStderr: (text) => {
        if (written || !text.includes(stepLine('prove-node'))) return;
        written = kubectl('patch', 'node', t.name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { nodeInfo: { containerRuntimeVersion: version } } }));
      },
    });
    expect(await written, result.stderr).toBeDefined();
    return result;
  }

  it('another runtime version: rolled back before uncordon (exit 11), the proof naming what the node reports', async () => {
    const result = await upgradeReporting('containerd://1.5.9');
    expect(result.code, result.stderr).toBe(11);
    const r = report(result);
    expect(r.pointOfNoReturn).toBe(false);
    expect(r.steps.find((s: any) => s.name === 'prove-node').error).toContain('the node reports containerd://1.5.9, not 1.6.20 (containerd 1.6.20~ds1-1+deb12u3)');
    // kubelet had started the bed's node agent on the new runtime, with an IP: torn down before the reinstall.
    expect(r.rollback.find((u: any) => u.step === 'start-kubelet').summary).toMatch(/; what kubelet set up meanwhile torn down: [1-9]\d* attachment\(s\) torn down, [1-9]\d* sandbox\(es\) removed/);
    await expectServing(t, bed().containerd.old);
  });

  it('no <runtime>://<version>: proven on the daemon\'s own version, and said so', async () => {
    const result = await upgradeReporting('kwok-0.7.0');
    expect(result.code, result.stderr).toBe(0);
    expect(report(result).steps.find((s: any) => s.name === 'prove-node').summary).toContain(`the node reports its runtime as "kwok-0.7.0", no <runtime>://<version>: the daemon's own version was checked instead`);
  });
});
