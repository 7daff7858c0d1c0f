import { describe, expect, it } from 'vitest';
import { BOOT_IDENTITY_SCRIPT } from '../../../src/node/reboot.js';
import { ConnectionLostError, type ExecResult, type Transport } from '../../../src/node/transport/types.js';
import type { RunEvent } from '../../../src/runbook/events.js';
import type { Journal } from '../../../src/runbook/journal.js';
import type { RunReport, StepReport } from '../../../src/runbook/report.js';
import { runStep } from '../../../src/runbook/runner.js';
import type { Step } from '../../../src/runbook/step.js';
import { NEVER_STOPPED } from '../../../src/stop.js';
import { contextOn } from './context-on.js';

// A step whose session was cut is planned and applied again on a new connection; before that try the node's boot is
// read, and a node still coming back (its sshd not up) cannot say it yet: that read's failure is a retry too, for as
// long as a reboot may take, never the step's failure (a rollback into a node that is booting).

const BOOT = '0f6b5a1e-3c2d-4e8f-9a7b-112233445566/4242';

/** A node whose boot reads fail as many times as asked (no answer: exit 255, as ssh says), then answer BOOT. */
function bootingNode(unreadable: number): Transport & { bootReads: () => number } {
  let reads = 0;
  return {
    target: 'ssh maint@node-1',
    bootReads: () => reads,
    async exec(script: string): Promise<ExecResult> {
      if (!script.includes(BOOT_IDENTITY_SCRIPT)) return { code: 0, stdout: '', stderr: '' };
      return ++reads <= unreadable ? { code: 255, stdout: '', stderr: 'ssh: connect to host node-1 port 22: Connection refused' } : { code: 0, stdout: `${BOOT}\n`, stderr: '' };
    },
    close: async () => undefined,
  };
}

/** A step that acts once its second try comes: the first one's session is cut. */
function cutOnce(target: string): Step & { applied: () => number } {
  let applies = 0;
  return {
    name: 'upgrade-runtime',
    title: 'upgrade the runtime',
    undo: '',
    applied: () => applies,
    plan: async () => ({ summary: 'containerd 1.6 -> 1.7', actions: ['apt-get install containerd'] }),
    async apply() {
      if (++applies === 1) throw new ConnectionLostError(target, true);
      return 'containerd 1.7 installed';
    },
    verify: async () => undefined,
  };
}

async function stepOn(node: ReturnType<typeof bootingNode>, rebootTimeoutSeconds: number) {
  const events: RunEvent[] = [];
  const journal = { runId: 'r1', steps: {} } as unknown as Journal;
  const ctx = contextOn(node, NEVER_STOPPED, { options: { node: 'node-1', rebootTimeoutSeconds, hooks: {} }, journal, emit: (e) => events.push(e) });
  const step = cutOnce(node.target);
  const reports = new Map<string, StepReport>([[step.name, { name: step.name, title: step.title, status: 'not-run', summary: '', actions: [], durationMs: 0 }]]);
  const said = () => events.flatMap((e) => (e.type === 'progress' ? [e.message] : []));
  const result = runStep(ctx, step, 0, reports, () => undefined, {} as RunReport);
  return { ctx, step, journal, said, result };
}

describe('a step retried after its session was cut, on a node whose boot cannot be read yet', () => {
  it('waits for the node, reads its boot on a later try, and records the step done on that boot', async () => {
    const node = bootingNode(1);
    const { ctx, step, journal, said, result } = await stepOn(node, 60);
    await result;
    expect(node.bootReads()).toBe(2);
    expect(step.applied()).toBe(2);
    expect(ctx.boot.now).toBe(BOOT);
    expect(journal.steps['upgrade-runtime']).toMatchObject({ status: 'done', boot: BOOT, summary: 'containerd 1.7 installed' });
    expect(said().join('\n')).toMatch(/node-1 does not answer since its session was lost \(.*could not read its boot identity.*\); waiting up to 60s/);
  }, 20_000);

  it('gives up once the node stayed silent past the reboot timeout: the step fails as unreachable, its apply not tried again', async () => {
    const node = bootingNode(Number.POSITIVE_INFINITY);
    const { step, journal, result } = await stepOn(node, 1);
    await expect(result).rejects.toMatchObject({ code: 'unreachable', message: expect.stringContaining('could not read its boot identity') });
    expect(step.applied()).toBe(1);
    expect(journal.steps['upgrade-runtime']?.status).not.toBe('done');
  }, 20_000);
});
