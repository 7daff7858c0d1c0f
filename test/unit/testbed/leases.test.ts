import { afterEach, describe, expect, it } from 'vitest';
import { auditNode } from '../../integration/bed.js';
import { assertHeld, CLUSTER_IPAM, held } from '../../integration/leases.js';

// Test 27's cases held resource:whereabouts alone: their reclaim across the cluster freed the handle test 55 had just
// left half-released, before 55's audit looked for it.
describe("the harness's check of the leases a reclaim across the cluster needs", () => {
  afterEach(() => held.clear());
  const hold = (...names: string[]) => names.forEach((name) => held.set(name, async () => undefined));

  it('refuses one that holds resource:whereabouts alone, before it runs anything, and names what is missing', () => {
    hold('resource:whereabouts');
    expect(() => auditNode(['no-such-node', '--reclaim', '--cluster-wide'])).toThrow(
      'a reclaim across the cluster without resource:calico: it would release what other files hold there',
    );
  });

  it('lets one through that holds both (checked without running the CLI)', () => {
    hold(...CLUSTER_IPAM);
    expect(() => assertHeld(CLUSTER_IPAM, 'a reclaim across the cluster')).not.toThrow();
  });
});
