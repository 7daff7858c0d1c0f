import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { fleetEnded, fleetStarted, nodeEnded, postMessage } from '../../../src/fleet/notify.js';

describe('fleet messages', () => {
  it('say what happened in their Slack-compatible text, with the facts as fields', () => {
    expect(fleetStarted('node-maint/prod', { changing: ['a', 'b'], targets: { containerd: '2' }, waves: [['a'], ['b']] })).toMatchObject({
      event: 'fleet-started',
      text: 'node-maint node-maint/prod: started: 2 node(s) to containerd 2 (a, b); waves: a, then b',
    });
    expect(nodeEnded('f', { node: 'a', result: 'upgraded', versionsBefore: { containerd: '1' }, versionsAfter: { containerd: '2' }, durationMs: 61_000 })).toMatchObject({
      event: 'node-finished',
      text: 'node-maint f: a: upgraded (containerd 1 -> containerd 2) in 61s',
    });
    expect(nodeEnded('f', { node: 'a', result: 'rolled-back', exitCode: 11, error: 'a: rolled-back (exit 11): kubelet did not start' })).toMatchObject({ event: 'node-failed', text: expect.stringMatching(/the fleet stops after this wave$/) });
    expect(nodeEnded('f', { node: 'a', result: 'skipped-undrainable', error: 'budget ledger' }).event).toBe('node-skipped');
    // A window or a pause holds a node: said as a hold, never as a failure.
    expect(nodeEnded('f', { node: 'a', result: 'held', error: 'outside the maintenance window' })).toMatchObject({ event: 'node-held', text: 'node-maint f: a: held, not started: outside the maintenance window' });
    expect(fleetEnded('f', { a: { result: 'upgraded' }, b: { result: 'held', reason: 'paused' } }, {}, undefined, { b: 'paused' })).toMatchObject({
      event: 'fleet-finished',
      text: 'node-maint f: finished: 1 upgraded, 1 held; held, the next `pulumi up` does them: b (paused)',
    });
    // A reboot alone changed no package: no "( -> )".
    expect(nodeEnded('f', { node: 'a', result: 'rebooted', versionsBefore: {}, versionsAfter: {}, durationMs: 30_000 }).text).toBe('node-maint f: a: rebooted in 30s');
    // The node is named once, whether or not the reason came with its name in front.
    expect(nodeEnded('f', { node: 'a', result: 'not-started', error: 'a: paused' })).toMatchObject({ event: 'node-held', text: 'node-maint f: a: not started: paused', error: 'paused' });
    expect(nodeEnded('f', { node: 'a', result: 'rolled-back', exitCode: 11, error: 'kubelet did not start' }).text).toBe('node-maint f: a: rolled-back (exit 11): kubelet did not start; the fleet stops after this wave');
    const ok = { result: 'upgraded' };
    expect(fleetEnded('f', { a: ok, b: ok, c: { result: 'skipped-undrainable' } }, { c: 'budget ledger' })).toMatchObject({ event: 'fleet-finished', text: 'node-maint f: finished: 2 upgraded, 1 skipped-undrainable; skipped: c (budget ledger)' });
    expect(fleetEnded('f', { a: ok, b: { result: 'failed', error: 'b: host down' } }, {}, { names: ['c'], count: 1 })).toMatchObject({
      event: 'fleet-failed',
      text: 'node-maint f: failed: 1 upgraded, 1 failed, 1 not-started; b: failed: host down; not started, the fleet stopped: c',
      results: { a: 'upgraded', b: 'failed', c: 'not-started' },
      errors: { b: 'host down' },
    });
  });
});

describe('posting to the webhook', () => {
  it('posts JSON; a webhook that keeps failing is said in the log and never throws', async () => {
    const received: unknown[] = [];
    let failures = 0;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (req.url === '/broken') {
          failures++;
          res.writeHead(500).end();
          return;
        }
        received.push({ type: req.headers['content-type'], body: JSON.parse(body) });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const log: string[] = [];
    try {
      const message = fleetEnded('f', { a: { result: 'upgraded' } }, {});
      await postMessage(`${url}/hook`, message, (l) => log.push(l));
      await postMessage(`${url}/broken`, message, (l) => log.push(l));
    } finally {
      server.close();
    }
    expect(received).toEqual([{ type: 'application/json', body: expect.objectContaining({ event: 'fleet-finished', text: 'node-maint f: finished: 1 upgraded' }) }]);
    expect(failures).toBe(3);
    expect(log).toEqual([`could not notify the webhook at ${url} of fleet-finished: answered 500`]);
  });
});
