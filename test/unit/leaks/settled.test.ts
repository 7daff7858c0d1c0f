import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ApiError, type Cluster } from '../../../src/cluster/api.js';
import { settledLiveAudit } from '../../../src/leaks/index.js';
import type { Transport } from '../../../src/node/transport/types.js';

// A real docker node (cri-dockerd, kubenet) with its one pod, read while kubelet was still making that pod: the sandbox
// container exists, its checkpoint is not written yet. Read again a moment later, the checkpoint is there.
const full = readFileSync('test/fixtures/real-node-state.txt', 'utf8');
const halfMade = full.replace(/(@@dir \/var\/lib\/cri-dockerd\/sandbox\n)[\s\S]*?(?=@@docker up)/, '$1');
const SANDBOX = '28b9f7e64c4b145fd092f90a5d39704cf424b355c044a671b68c94caca46ebf6';

function node(reads: string[]) {
  let n = 0;
  const transport = {
    target: 'vm',
    exec: async () => ({ code: 0, stdout: reads[Math.min(n++, reads.length - 1)], stderr: '' }),
    close: async () => undefined,
  } as unknown as Transport;
  const pod = {
    metadata: { name: 'node-agent-fd8df', namespace: 'demo', uid: '0de76694-36e1-4b6f-8879-26057bc56c58' },
    spec: { nodeName: 'vm' },
    status: { phase: 'Running', podIP: '10.128.0.2', podIPs: [{ ip: '10.128.0.2' }] },
  };
  const cluster = {
    get: async (path: string) => {
      if (path.startsWith('/api/v1/nodes/')) return { metadata: { name: 'vm' }, spec: { podCIDR: '10.128.0.0/25', podCIDRs: ['10.128.0.0/25'] }, status: {} };
      if (path.startsWith('/api/v1/pods')) return { items: [pod] };
      throw new ApiError(404, 'NotFound', `${path}: not found`);
    },
  } as unknown as Cluster;
  return { input: { cluster, transport, node: 'vm' }, reads: () => n };
}

describe('a live audit settles before it counts', () => {
  it('a sandbox caught before its checkpoint is written is no leak once the checkpoint is there', async () => {
    const k = node([halfMade, full]);
    const report = await settledLiveAudit(k.input, 10, 1);
    expect(report.verdict).toBe('clean');
    expect(k.reads()).toBe(2);
  });

  it('one that stays without a checkpoint is a leak, after every retry', async () => {
    const k = node([halfMade]);
    const report = await settledLiveAudit(k.input, 3, 1);
    expect(report.verdict).toBe('leaks');
    expect(report.findings.map((f) => [f.class, f.evidence.containerId])).toEqual([['sandbox-without-checkpoint', SANDBOX]]);
    expect(k.reads()).toBe(4);
  });
});
