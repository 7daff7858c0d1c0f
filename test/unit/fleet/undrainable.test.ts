import { describe, expect, it } from 'vitest';
import { undrainableReason } from '../../../src/fleet/undrainable.js';

const run = (exitCode: number, failedStep?: string) => ({
  exitCode,
  error: { message: 'boom' },
  steps: ['preflight', 'cordon', 'drain', 'stop-kubelet'].map((name) => ({ name, status: name === failedStep ? 'failed' : 'done' })),
});

describe('undrainableReason', () => {
  it('is a budget refused in preflight, or a drain that failed and was rolled back', () => {
    expect(undrainableReason(run(8))).toBe('boom');
    expect(undrainableReason(run(11, 'drain'))).toBe('the drain did not finish: boom');
  });

  it('is nothing else: another step rolled back, a failed rollback, a run past the point of no return', () => {
    expect(undrainableReason(run(11, 'stop-kubelet'))).toBeUndefined();
    expect(undrainableReason(run(12, 'drain'))).toBeUndefined();
    expect(undrainableReason(run(14))).toBeUndefined();
    expect(undrainableReason(run(0))).toBeUndefined();
  });
});
