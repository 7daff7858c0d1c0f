import { addressAt } from '../../node/cni/host-local.js';
import { CALICO_NETWORK, type Finding, type MeasuredRange } from '../types.js';
import { affineNode, type CalicoView } from './types.js';

// Each block affine to the node as a range, as host-local's ranges are counted: its addresses, how many calico-ipam
// has allocated (its tunnel address too), and how many of those the audit found leaked. A full block is not a full
// node (calico-ipam then claims another block of the pool, or borrows), which the alert rules say.
export function blockUsage(view: CalicoView, node: string, findings: Finding[]): MeasuredRange[] {
  return view.blocks
    .filter((b) => affineNode(b) === node && !b.spec.deleted)
    .map((b) => {
      const allocated = b.spec.allocations.filter((a) => a !== null && a !== undefined).length;
      const leaked = findings.filter((f) => f.class === 'calico-ip-leaked' && f.evidence.cidr === b.spec.cidr).length;
      return {
        network: CALICO_NETWORK,
        cidr: b.spec.cidr,
        first: addressAt(b.spec.cidr, 0) ?? '',
        last: addressAt(b.spec.cidr, b.spec.allocations.length - 1) ?? '',
        source: `IPAMBlock ${b.metadata.name}`,
        usable: b.spec.allocations.length,
        allocated,
        inUse: allocated - leaked,
        leaked,
      };
    })
    .sort((a, b) => a.cidr.localeCompare(b.cidr));
}
