import { describe, expect, it } from 'vitest';
import type { RunContext } from '../../../src/runbook/step.js';
import { teardownSandboxes } from '../../../src/steps/teardown-sandboxes.js';
import { emptyState } from '../leaks/state-builder.js';

// The teardown on a node whose runtime does not answer: waited for only while its units are starting (a boot's
// queued start), and only until they run and it answers; a unit that is stopped, or stops meanwhile, fails the step.

/** `units`: systemctl's "ActiveState Job" for containerd at each look; `reachable`: the runtime's answer at each read. */
function node(units: string[], reachable: boolean[]) {
  let looks = 0;
  let reads = 0;
  const lines: string[] = [];
  const ctx = {
    options: { node: 'n1' },
    journal: { prior: { flavor: 'containerd', runtimeServices: ['containerd'] } },
    nodeState: async () => emptyState({ runtimeReachable: reachable[Math.min(reads++, reachable.length - 1)]! }),
    reader: { target: 'test', exec: async () => ({ code: 0, stdout: `containerd ${units[Math.min(looks++, units.length - 1)]}\n`, stderr: '' }), close: async () => undefined },
    cluster: { get: async () => ({ metadata: { name: 'n1' }, spec: { podCIDR: '10.128.0.0/25' }, status: {} }) },
    progress: (line: string) => lines.push(line),
  } as unknown as RunContext;
  return { ctx, lines, looks: () => looks, reads: () => reads };
}

describe('the teardown while the runtime does not answer', () => {
  it('a runtime stopped (not starting): the step fails at once, nothing waited for', async () => {
    const n = node(['inactive '], [false]);
    await expect(teardownSandboxes.plan(n.ctx)).rejects.toThrow(/^the container runtime did not answer .*: could not tear down its sandboxes$/);
    expect([n.looks(), n.lines]).toEqual([1, []]);
  });

  it('a runtime starting that stops meanwhile (its start failed): the step fails, naming the unit', async () => {
    const n = node(['activating ', 'failed '], [false]);
    await expect(teardownSandboxes.plan(n.ctx)).rejects.toThrow(/could not tear down its sandboxes: containerd did not start$/);
    expect(n.lines).toEqual(['the container runtime is starting (containerd: a start queued by the boot): waiting up to 120s for it']);
  });

  it('a start queued, then running but not answering yet, then answering: planned on the answering read', async () => {
    const n = node(['inactive 42', 'active ', 'active '], [false, false, true]);
    await expect(teardownSandboxes.plan(n.ctx)).resolves.toMatchObject({ summary: '0 attachment(s) to tear down, 0 sandbox(es) to remove' });
    expect([n.looks(), n.reads()]).toEqual([3, 3]);
  }, 15_000);

  it('an operator\'s stop while it waits stays a stop (a safe point), not the runtime\'s failure', async () => {
    const n = node(['activating '], [false]);
    const stop = new AbortController();
    const ctx = { ...n.ctx, stop: stop.signal, progress: () => stop.abort('SIGINT') } as unknown as RunContext;
    const error = await teardownSandboxes.plan(ctx).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'stopped', message: expect.stringMatching(/: it gave up waiting for the container runtime to start and answer$/) });
  });
});
