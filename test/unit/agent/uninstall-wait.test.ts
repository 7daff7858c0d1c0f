import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// An uninstalled agent waits, alive, to be removed: were its process to end, kubelet would start it again, and the
// runtime would make the host folders of its mounts again (the bed's CI found them left after an uninstall).
const script = `
import { waitToBeRemoved } from '${new URL('../../../dist/agent/uninstall.js', import.meta.url).pathname}';
await waitToBeRemoved();
`;

describe("an uninstalled agent's wait", () => {
  it('holds the process until it is stopped (a bare pending promise lets Node exit 13)', async () => {
    const ended = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 1_500 }).then(
      () => ({ killed: false, code: 0 }),
      (e: { killed: boolean; code: number | null }) => ({ killed: e.killed, code: e.code }),
    );
    expect(ended).toEqual({ killed: true, code: null });
  });
});
