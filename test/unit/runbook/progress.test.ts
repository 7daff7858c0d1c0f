import { describe, expect, it } from 'vitest';
import { progressPrinter } from '../../../src/runbook/progress.js';

describe('the live progress lines', () => {
  it('a preflight that changes nothing says it checked; other steps with nothing to do say so', () => {
    const lines: string[] = [];
    const print = progressPrinter((l) => lines.push(l));
    print({ type: 'step', phase: 'start', step: 'preflight', index: 0, total: 11, title: 'Preflight' });
    print({ type: 'step', phase: 'nothing-to-do', step: 'preflight', summary: 'already at target', durationMs: 1_300, actions: [] });
    print({ type: 'step', phase: 'start', step: 'cordon', index: 1, total: 11, title: 'Cordon' });
    print({ type: 'step', phase: 'nothing-to-do', step: 'cordon', summary: 'already cordoned', durationMs: 100, actions: [] });
    expect(lines).toEqual(['[ 1/11] Preflight ...', '[ 1/11] checked in 1.3s: already at target', '[ 2/11] Cordon ...', '[ 2/11] nothing to do in 0.1s: already cordoned']);
  });
});
