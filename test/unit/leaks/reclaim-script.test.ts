import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReclaimPlan } from '../../../src/leaks/reclaim/plan.js';
import { parseReclaimOutput, reclaimScript } from '../../../src/leaks/reclaim/script.js';

// The reclaim's node script run by sh on a host-local directory, against a crictl or docker that answers as the
// real ones do: found, not found, or no answer at all (crictl's "DeadlineExceeded" on a loaded node, docker down).
const ID = 'a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2';
const ANSWERS = {
  found: { text: '{"status": {}}', code: 0 },
  criNotFound: { text: 'rpc error: code = NotFound desc = an error occurred when try to find sandbox: not found', code: 1 },
  criTimeout: { text: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded', code: 1 },
  dockerNotFound: { text: `Error: No such container: ${ID}`, code: 1 },
  dockerDown: { text: 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?', code: 1 },
};
let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function reclaimOne(flavor: 'containerd' | 'dockershim', answer: keyof typeof ANSWERS, what: 'reservation' | 'checkpoint' = 'reservation') {
  dir = mkdtempSync('/tmp/reclaim-script-');
  const net = join(dir, 'networks', 'pods');
  mkdirSync(net, { recursive: true });
  // A checkpoint lies outside the IPAM directories (one there naming the sandbox keeps it as network-held).
  const path = what === 'checkpoint' ? join(dir, 'checkpoint') : join(net, '10.88.0.7');
  writeFileSync(path, `${ID}\neth0`);
  const { text, code } = ANSWERS[answer];
  for (const tool of ['crictl', 'docker']) {
    writeFileSync(join(dir, tool), `#!/bin/sh\necho '${text}' >&2\nexit ${code}\n`);
    chmodSync(join(dir, tool), 0o755);
  }
  const plan: ReclaimPlan = {
    replays: [], netns: [], containers: [],
    reservations: what === 'reservation' ? [{ path, dir: net, containerId: ID, ip: '10.88.0.7' }] : [],
    checkpoints: what === 'checkpoint' ? [{ path, sandboxId: ID }] : [],
    calico: [], whereabouts: [], skipped: [], refused: [],
  };
  const script = reclaimScript(plan, { flavor, binDir: dir, backupDir: join(dir, 'backup'), ipamRoots: [join(dir, 'networks')] });
  const out = execFileSync('sh', ['-c', script], { env: { PATH: `${dir}:/usr/bin:/bin` } }).toString();
  return { outcomes: parseReclaimOutput(out).map((o) => [o.verdict, o.detail]), kept: existsSync(path), backedUp: existsSync(join(dir, 'backup', path)) };
}

describe('the reclaim script asks the runtime whether a reservation\'s owner lives, and frees only on a "not found"', () => {
  it.each([
    ['containerd', 'criNotFound'],
    ['dockershim', 'dockerNotFound'],
  ] as const)('%s saying not found: the reservation is backed up, then freed', (flavor, answer) => {
    expect(reclaimOne(flavor, answer)).toEqual({ outcomes: [['freed', undefined]], kept: false, backedUp: true });
  });

  it.each([
    ['containerd', 'criTimeout'],
    ['dockershim', 'dockerDown'],
  ] as const)('%s not answering: the reservation is kept and the outcome says why (fail closed)', (flavor, answer) => {
    expect(reclaimOne(flavor, answer)).toEqual({ outcomes: [['failed', `kept: the runtime did not say whether container ${ID} exists`]], kept: true, backedUp: false });
  });

  it('a checkpoint whose sandbox the runtime cannot tell about is kept too', () => {
    expect(reclaimOne('dockershim', 'dockerDown', 'checkpoint')).toMatchObject({ outcomes: [['failed', expect.stringMatching(/^kept: /)]], kept: true });
  });

  it('a container the runtime finds is alive: kept', () => {
    expect(reclaimOne('containerd', 'found')).toEqual({ outcomes: [['alive', undefined]], kept: true, backedUp: false });
  });
});
