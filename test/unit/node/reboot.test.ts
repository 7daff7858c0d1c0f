import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bootAfterRebootCommand, bootIdentity, parseBootIdentity, RebootCommandFailed, rebootRequired, rebootScript } from '../../../src/node/reboot.js';
import { LocalTransport } from '../../../src/node/transport/local.js';

// The boot identity and the sentinel, read by the same scripts a node runs, through a real sh on this machine.
describe('a node\'s boot, as the reboot step reads it', () => {
  const local = new LocalTransport();

  it('is the kernel boot_id and PID 1\'s start time, as /proc says them', async () => {
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const started = readFileSync('/proc/1/stat', 'utf8').replace(/^.*\) /, '').split(' ')[19];
    expect(await bootIdentity(local)).toBe(`${bootId}/${started}`);
  });

  it('refuses an answer that is no boot identity, rather than take it for a new boot', () => {
    expect(() => parseBootIdentity('')).toThrow(/unreadable boot identity/);
    expect(() => parseBootIdentity('sh: 1: cannot open /proc/1/stat')).toThrow(/unreadable boot identity/);
  });

  it('takes the sentinel command\'s exit status for the answer (a reboot is required on 0)', async () => {
    expect(await rebootRequired(local, 'test 1 = 1')).toBe('the sentinel command exited 0 (test 1 = 1)');
    expect(await rebootRequired(local, 'exit 1')).toBeUndefined();
    expect(await rebootRequired(local, 'echo noise; false')).toBeUndefined();
  });

  it('asks for the reboot detached and a moment later, so the command answers first', async () => {
    const t0 = Date.now();
    const marker = `/tmp/node-maint-reboot-test-${process.pid}`;
    const r = await local.exec(rebootScript(`touch ${marker}`, `${marker}-outcome`));
    expect([r.code, Date.now() - t0 < 1_500]).toEqual([0, true]);
    await new Promise((done) => setTimeout(done, 3_000));
    expect(readFileSync(marker, 'utf8')).toBe('');
    await local.exec(`rm -f ${marker} ${marker}-outcome.*`);
  });

  it('says at once a reboot command that failed on the boot it was asked from; one that exited 0 is a reboot on its way', async () => {
    const outcome = `/tmp/node-maint-reboot-test-${process.pid}-outcome`;
    const boot = await bootIdentity(local);
    const failing = 'echo "Failed to connect to bus" >&2; exit 3';
    await local.exec(rebootScript(failing, outcome));
    expect(await bootAfterRebootCommand(local, boot, outcome, failing)).toBe(boot);
    await new Promise((done) => setTimeout(done, 3_000));
    const failed = await bootAfterRebootCommand(local, boot, outcome, failing).catch((e) => e);
    expect(failed).toBeInstanceOf(RebootCommandFailed);
    expect(failed.message).toBe(`the reboot command exited 3 and the node did not reboot: ${failing}: Failed to connect to bus`);
    // Asked again (a resume): the last outcome is cleared first; this command prints a number, works on, exits 0.
    await local.exec(rebootScript('echo 1; sleep 2', outcome));
    await new Promise((done) => setTimeout(done, 3_000));
    expect(await bootAfterRebootCommand(local, boot, outcome, 'echo 1; sleep 2')).toBe(boot);
    await new Promise((done) => setTimeout(done, 2_000));
    expect(await bootAfterRebootCommand(local, boot, outcome, 'echo 1; sleep 2')).toBe(boot);
    await local.exec(`rm -f ${outcome}.*`);
  });
});

describe('the reboot step, resumed on the new boot', () => {
  it('counts the reboot from when the run asked it, also where the shutdown ended the run before it said so', async () => {
    const { rebootNode } = await import('../../../src/steps/reboot.js');
    const at = new Date(Date.now() - 90_000).toISOString();
    const journal = { reboot: { before: 'an-older-boot/1', at }, steps: {} };
    const local = new LocalTransport();
    const ctx = { runId: `r-${process.pid}`, options: { node: 'n1', rebootTimeoutSeconds: 5, rebootCommand: 'systemctl reboot' }, journal, reader: local, transport: local, progress: () => undefined, saveJournal: async () => undefined, stop: new AbortController().signal };
    expect(await rebootNode.apply(ctx as never, { actions: [], summary: '' })).toMatch(/^rebooted in 9\ds \(boot an-older\/1 -> /);
  });

  it('says how the node is seen back in the words of the way it is reached', async () => {
    const { rebootNode } = await import('../../../src/steps/reboot.js');
    const plan = (target: string) => rebootNode.plan({ options: { node: 'n1', reboot: 'always', rebootTimeoutSeconds: 600, rebootCommand: 'systemctl reboot' }, journal: { steps: {} }, transport: { target } } as never);
    expect((await plan('ssh maint@10.0.0.1:22')).actions[1]).toBe('wait up to 600s for a new boot, SSH with the same host key');
    expect((await plan('local')).actions[1]).toContain('this run, ended by the shutdown, goes on from its journal once started again (the agent does so at boot)');
    expect((await plan('docker exec kind-worker')).actions[1]).toBe('wait up to 600s for a new boot, docker exec kind-worker answering again');
  });
});

describe('the reboot step in a rollback', () => {
  it('says a reboot cannot be undone where the run rebooted, and nothing where it did not', async () => {
    const { rebootNode } = await import('../../../src/steps/reboot.js');
    const ctx = (reboot?: object, steps: object = {}) => ({ options: { node: 'n1' }, journal: { reboot, steps } }) as never;
    expect(await rebootNode.rollback!(ctx({ before: 'a/1', at: '', after: 'a/2' }))).toBe('n1 was rebooted: a reboot cannot be undone');
    expect(await rebootNode.rollback!(ctx())).toBeUndefined();
    // start-kubelet's own rollback, just before, stopped the kubelet of the new boot: nothing more to stop.
    expect(await rebootNode.rollback!(ctx({ before: 'a/1', at: '', after: 'a/2' }, { 'stop-kubelet': { status: 'done' }, 'start-kubelet': { status: 'rolled-back' } }))).toBe('n1 was rebooted: a reboot cannot be undone');
  });

  it('waits, before the steps undone after it, for the new boot of a reboot asked and not yet seen (a stop in its wait)', async () => {
    const { rebootNode } = await import('../../../src/steps/reboot.js');
    const journal = { reboot: { before: 'an-older-boot/1', at: '', asked: '2026-11-27T20:00:00Z' }, steps: {} };
    const lines: string[] = [];
    const reader = new LocalTransport();
    let reads = 0;
    const counted = { ...reader, target: reader.target, exec: (...a: Parameters<LocalTransport['exec']>) => (reads++, reader.exec(...a)) };
    const ctx = { runId: 'r1', options: { node: 'n1', rebootTimeoutSeconds: 5, rebootCommand: 'systemctl reboot' }, journal, reader: counted, progress: (l: string) => lines.push(l), stop: new AbortController().signal };
    expect(await rebootNode.rollback!(ctx as never)).toBe('n1 was rebooted: a reboot cannot be undone');
    expect([lines, reads]).toEqual([['waiting up to 5s for n1 to come back on a new boot'], 1]);
    // Not asked (the run ended between its journal and the command): no wait, nothing read.
    lines.length = 0;
    expect(await rebootNode.rollback!({ ...ctx, journal: { reboot: { before: 'an-older-boot/1', at: '' }, steps: {} } } as never)).toBe('n1 was rebooted: a reboot cannot be undone');
    expect([lines, reads]).toEqual([[], 1]);
  });
});
