import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { addressAt } from '../../src/node/cni/host-local.js';
import { bed, kubectlJson } from './bed.js';

// Calico on the bed (testbed/lib/calico.sh): what calico-ipam recorded, and calicoctl, the tool a Calico operator
// would check it with, run against the same API.
const exec = promisify(execFile);
export const GROUP = 'crd.projectcalico.org';

/** calicoctl against the bed's API (Kubernetes datastore); no calico-node runs, so its version check is waived. */
export async function calicoctl(...args: string[]): Promise<string> {
  const { stdout } = await exec(bed().calico.calicoctl, [...args, '--allow-version-mismatch'], {
    env: { ...process.env, DATASTORE_TYPE: 'kubernetes', KUBECONFIG: bed().kubeconfig },
    maxBuffer: 64 * 2 ** 20,
  });
  return stdout;
}

export interface CalicoctlAllocation {
  ip: string;
  handle?: string;
  pod?: string;
  namespace?: string;
  node?: string;
  inUse: boolean;
  borrowed?: boolean;
}

/** `calicoctl ipam check`'s report: every allocation (in use or not) and the handles it found with no address. */
export async function calicoctlCheck(): Promise<{ allocations: CalicoctlAllocation[]; leakedHandles: string[]; text: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'calicoctl-check-'));
  try {
    const text = await calicoctl('ipam', 'check', '--show-problem-ips', '-o', join(dir, 'report.json'));
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    return {
      allocations: Object.values<CalicoctlAllocation[]>(report.allocations ?? {}).flat(),
      leakedHandles: (report.leakedHandles ?? []).map((h: { ID: string }) => h.ID),
      text,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Allocation {
  ip: string;
  block: string;
  blockNode: string;
  handle: string;
  pod: string;
  node: string;
}

/** Every allocation of every block, as calico-ipam wrote it (handle, the pod and node its attributes name). */
export async function allocations(): Promise<Allocation[]> {
  const blocks = (await kubectlJson('get', `ipamblocks.${GROUP}`)).items;
  return blocks.flatMap((b: any) =>
    (b.spec.allocations as Array<number | null>).flatMap((index, ordinal) => {
      if (index === null) return [];
      const attr = b.spec.attributes[index] ?? {};
      const ip = addressAt(b.spec.cidr, ordinal) ?? '';
      return [{ ip, block: b.spec.cidr, blockNode: String(b.spec.affinity ?? '').replace(/^host:/, ''), handle: attr.handle_id ?? '', pod: attr.secondary?.pod ? `${attr.secondary.namespace}/${attr.secondary.pod}` : '', node: attr.secondary?.node ?? '' }];
    }),
  );
}

/** The blocks affine to a node. */
export const blocksOf = async (node: string): Promise<string[]> =>
  (await kubectlJson('get', `ipamblocks.${GROUP}`)).items.filter((b: any) => b.spec.affinity === `host:${node}`).map((b: any) => b.spec.cidr as string).sort();
