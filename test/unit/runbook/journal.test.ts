import { describe, expect, it } from 'vitest';
import { finishedEarlier, isRollingBack, isUnfinished, newJournal, parseJournal, rebootInFlight, stepsToUndo, undoneByBoot } from '../../../src/runbook/journal.js';
import { STEPS } from '../../../src/steps/index.js';

const order = STEPS.map((s) => s.name);

describe('the journal', () => {
  it('undoes, newest first, every step that acted in any process of the run, and nothing that did not', () => {
    const j = newJournal('r', 'n', 'h', { containerd: '2' });
    const at = (status: any) => ({ status, startedAt: '', summary: '' });
    j.steps = { cordon: at('done'), drain: at('done'), 'stop-kubelet': at('nothing-to-do'), 'teardown-sandboxes': at('done'), 'clear-state': at('done'), 'upgrade-runtime': at('applying') };
    expect(stepsToUndo(j, order)).toEqual(['upgrade-runtime', 'clear-state', 'teardown-sandboxes', 'drain', 'cordon']);
    j.steps['upgrade-runtime'] = at('rolled-back');
    j.steps['clear-state'] = at('rollback-failed');
    expect(stepsToUndo(j, order)).toEqual(['clear-state', 'teardown-sandboxes', 'drain', 'cordon']);
  });
  it('a step done or found with nothing to do is not done again on resume; an interrupted one is', () => {
    const j = newJournal('r', 'n', 'h', {});
    j.steps = { cordon: { status: 'done', startedAt: '', summary: '' }, drain: { status: 'applying', startedAt: '', summary: '' }, 'stop-kubelet': { status: 'nothing-to-do', startedAt: '', summary: '' } };
    expect(finishedEarlier(j, 'cordon')).toBe(true);
    expect(finishedEarlier(j, 'stop-kubelet')).toBe(true);
    expect(finishedEarlier(j, 'drain')).toBe(false);
  });
  it('takes what a boot undoes (kubelet stopped, sandboxes torn down) as undone on a boot the run did not ask, and only then', () => {
    const j = newJournal('r', 'n', 'h', { containerd: '2' });
    const on = (boot?: string, status: any = 'done') => ({ status, startedAt: '', summary: '', ...(boot ? { boot } : {}) });
    const names = ['stop-kubelet', 'teardown-sandboxes', 'clear-state'];
    j.steps = { 'stop-kubelet': on('a/1'), 'teardown-sandboxes': on('a/1'), 'clear-state': on(undefined), 'upgrade-runtime': on(undefined, 'applying') };
    expect(undoneByBoot(j, names, 'a/1')).toEqual([]);
    // A power cut: the boot changed, and this run asked no reboot.
    expect(undoneByBoot(j, names, 'a/9')).toEqual(['stop-kubelet', 'teardown-sandboxes']);
    expect(undoneByBoot(j, names, undefined)).toEqual([]);
    // Once the run started kubelet itself, or after its own reboot: what follows expects a running kubelet.
    expect(undoneByBoot({ ...j, steps: { ...j.steps, 'start-kubelet': on('a/1', 'applying') } }, names, 'a/9')).toEqual([]);
    j.reboot = { before: 'a/1', at: 't', asked: 't' };
    expect(undoneByBoot(j, names, 'a/9')).toEqual([]);
  });
  it('expects a node silent only between the reboot it took and its new boot, in a run not finished', () => {
    const j = newJournal('r', 'n', 'h', {});
    expect(rebootInFlight(j)).toBe(false);
    j.reboot = { before: 'b/1', at: 't' };
    expect(rebootInFlight(j)).toBe(false);
    j.reboot.asked = 't';
    expect(rebootInFlight(j)).toBe(true);
    expect(rebootInFlight({ ...j, status: 'completed' })).toBe(false);
    j.reboot.after = 'b/2';
    expect(rebootInFlight(j)).toBe(false);
  });
  it('knows an unfinished run, and one killed while it rolled back', () => {
    const j = newJournal('r', 'n', 'h', {});
    expect(isUnfinished(j)).toBe(true);
    for (const status of ['completed', 'rolled-back', 'failed'] as const) expect(isUnfinished({ ...j, status })).toBe(false);
    expect(isUnfinished({ ...j, status: 'rolling-back' }) && isRollingBack({ ...j, status: 'rolling-back' })).toBe(true);
    expect(isRollingBack({ ...j, status: 'rollback-failed' })).toBe(true);
  });
  it('reads a version 1 journal: past the point of no return once its uncordon was done, no holds known', () => {
    const v1 = { version: 1, runId: 'r', node: 'n', holder: 'h', status: 'running', targets: {}, cordonedByUs: true, steps: { uncordon: { status: 'done' } }, backups: [], prior: { packages: {} } };
    expect(parseJournal(JSON.stringify(v1))).toMatchObject({ version: 2, pointOfNoReturn: true, prior: { held: [] } });
    expect(parseJournal('not json')).toBeUndefined();
    expect(parseJournal(JSON.stringify({ version: 3, runId: 'r', steps: {} }))).toBeUndefined();
  });
  it('every step says what its rollback does, in one line', () => {
    for (const s of STEPS) expect(s.undo, s.name).toMatch(/^[^\n]{10,160}$/);
    expect(order.indexOf('prove-node')).toBeLessThan(order.indexOf('uncordon'));
  });
});
