import { afterEach, describe, expect, it } from 'vitest';
import { stopOnSignals } from '../../../src/cli/signals.js';
import { expectShutdown } from '../../../src/stop.js';

// The handlers' words, with the signals emitted to this process's listeners only (no signal is sent).
describe('a run stopped by a signal', () => {
  afterEach(() => expectShutdown(undefined));

  const first = (signal: NodeJS.Signals) => {
    const said: string[] = [];
    const stopping = stopOnSignals((l) => void said.push(l), () => undefined, undefined);
    process.emit(signal, signal);
    stopping.dispose();
    return { said, reason: stopping.signal.reason };
  };

  it("says a stop at the next safe point; while the run's own reboot is asked on its node, a SIGTERM is that shutdown", () => {
    expect(first('SIGTERM').said).toEqual([expect.stringMatching(/^node-maint: SIGTERM received: stopping at the next safe point .*send it again to end at once$/)]);
    expectShutdown('the node is shutting down for the reboot this run asked');
    expect(first('SIGTERM')).toEqual({ said: ['node-maint: SIGTERM received: the node is shutting down for the reboot this run asked'], reason: 'SIGTERM' });
    // An operator's Ctrl-C is a stop, whatever the run is doing.
    expect(first('SIGINT').said[0]).toMatch(/SIGINT received: stopping at the next safe point/);
  });
});
