import { describe, expect, it } from 'vitest';
import { undoneAgain } from '../../../src/runbook/boot.js';

describe('what a resume says it did again', () => {
  it("keeps the boot as why when the boot's kubelet comes back under a retried step; kubelet otherwise", () => {
    const byBoot = { why: 'boot' as const, before: 'b1', after: 'b2', redone: ['stop-kubelet', 'teardown-sandboxes'] };
    const redo = ['stop-kubelet', 'teardown-sandboxes', 'clear-state'];
    expect(undoneAgain(byBoot, 'b2', redo)).toEqual({ ...byBoot, redone: redo });
    // Another boot since, a boot not read, or nothing said before: kubelet started by hand is the word.
    for (const [said, boot] of [[byBoot, 'b3'], [byBoot, undefined], [undefined, 'b2']] as const) {
      expect(undoneAgain(said, boot, redo)).toEqual({ why: 'kubelet', redone: redo });
    }
  });
});
