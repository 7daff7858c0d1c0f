import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { holderIdentity, isDeadLocalHolder, judgeHolder, leaseRecord, takenSpec } from '../../../src/cluster/lease.js';
import type { Lease } from '../../../src/cluster/types.js';

const lease = (holder: string | null, renewTime: string, rv: string): Lease => ({
  metadata: { name: 'node-maint-n', resourceVersion: rv },
  spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime },
});
const far = 'node-maint/other-machine/123/456';

describe('judging a Lease holder by our own clock (client-go leader election)', () => {
  it('watches a holder first, then calls it alive when its record changes, even with a clock 60 s ahead', () => {
    const ahead = (s: number) => new Date(Date.now() + 60_000 + s * 1000).toISOString();
    const first = lease(far, ahead(0), '10');
    expect(judgeHolder(first, 'me', undefined, 0, 15)).toBe('held');
    const seen = { record: leaseRecord(first), atMs: 0 };
    // 20 s later by our clock, the holder renewed (its renewTime is in our future: never compared with our clock).
    expect(judgeHolder(lease(far, ahead(20), '11'), 'me', seen, 20_000, 15)).toBe('alive');
  });
  it('calls a holder whose record did not change for a lease duration abandoned, not sooner', () => {
    const stale = lease(far, '2020-01-01T00:00:00.000000Z', '10');
    const seen = { record: leaseRecord(stale), atMs: 1_000 };
    expect(judgeHolder(stale, 'me', seen, 15_999, 15)).toBe('held');
    expect(judgeHolder(stale, 'me', seen, 16_000, 15)).toBe('abandoned');
  });
  it('counts the holder\'s own lease duration; one longer than ours is a fence, not waited out', () => {
    const short = { ...lease(far, '2020-01-01T00:00:00.000000Z', '10'), spec: { holderIdentity: far, leaseDurationSeconds: 5 } };
    const seen = { record: leaseRecord(short), atMs: 0 };
    expect(judgeHolder(short, 'me', seen, 4_999, 15)).toBe('held');
    expect(judgeHolder(short, 'me', seen, 5_000, 15)).toBe('abandoned');
    const byHand = { ...short, spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 3600 } };
    expect(judgeHolder(byHand, 'me', undefined, 0, 15)).toBe('fenced');
    expect(judgeHolder(byHand, 'me', { record: leaseRecord(byHand), atMs: 0 }, 3_600_000, 15)).toBe('fenced');
  });
  it('a released Lease is free, our own is ours', () => {
    expect(judgeHolder(lease(null, '', '1'), 'me', undefined, 0, 15)).toBe('free');
    expect(judgeHolder(undefined, 'me', undefined, 0, 15)).toBe('free');
    expect(judgeHolder(lease('me', '', '1'), 'me', undefined, 0, 15)).toBe('ours');
  });
  it('takes over at once from a run of this machine whose process is gone; a live one is judged by its record', async () => {
    const child = spawn('sleep', ['30']);
    const live = holderIdentity(child.pid!);
    expect(isDeadLocalHolder(live)).toBe(false);
    const stuck = lease(live, '2020-01-01T00:00:00.000000Z', '1');
    expect(judgeHolder(stuck, 'me', undefined, 0, 15)).toBe('held');
    // Alive while its record changes; a live process whose record stands still (stuck, orphaned) is taken over.
    expect(judgeHolder(lease(live, '2020-01-01T00:00:02.000000Z', '2'), 'me', { record: leaseRecord(stuck), atMs: 0 }, 2_000, 15)).toBe('alive');
    expect(judgeHolder(stuck, 'me', { record: leaseRecord(stuck), atMs: 0 }, 15_000, 15)).toBe('abandoned');
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    expect(isDeadLocalHolder(live)).toBe(true);
    expect(judgeHolder(lease(live, '', '1'), 'me', undefined, 0, 15)).toBe('abandoned');
    // A PID reused by another process is not the holder: its start time differs.
    const reused = holderIdentity(process.ppid).replace(/\/\d+@/, '/1@');
    expect(isDeadLocalHolder(reused)).toBe(true);
    expect(isDeadLocalHolder(far)).toBe(false);
  });
  it('never takes a run of another machine with the same hostname, or of another PID namespace, for one of its own', async () => {
    const child = spawn('sleep', ['30']);
    const mine = holderIdentity(child.pid!);
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    expect(mine).toMatch(new RegExp(`^node-maint/${hostname()}@[0-9a-f]{12}/${child.pid}/\\d+@\\d+$`));
    const twin = mine.replace(/@[0-9a-f]{12}\//, '@000000000000/');
    // A container sharing this host's network and machine id, in a PID namespace of its own: its PIDs mean nothing here.
    const container = mine.replace(/@\d+$/, '@1');
    // Written before holders named their PID namespace: cannot tell either.
    const older = mine.replace(/@\d+$/, '');
    expect(isDeadLocalHolder(mine)).toBe(true);
    for (const other of [twin, container, older]) {
      expect(isDeadLocalHolder(other)).toBe(false);
      expect(judgeHolder(lease(other, '', '1'), 'me', undefined, 0, 15)).toBe('held');
    }
  });
  it('counts a transition only when the Lease changes hands', () => {
    const held = { ...lease('old', '', '1'), spec: { ...lease('old', '', '1').spec, leaseTransitions: 3 } };
    expect(takenSpec(held, 'me', 15).leaseTransitions).toBe(4);
    expect(takenSpec({ ...held, spec: { ...held.spec, holderIdentity: 'me' } }, 'me', 15).leaseTransitions).toBe(3);
    expect(takenSpec(undefined, 'me', 15)).toMatchObject({ holderIdentity: 'me', leaseDurationSeconds: 15, leaseTransitions: 0 });
  });
});
