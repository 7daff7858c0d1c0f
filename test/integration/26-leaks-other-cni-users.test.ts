import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, DRAIN_FLAGS, upgradeNode } from './bed.js';
import { report } from './faults.js';
import { nodeAudit } from './fixtures.js';
import { useNodes, type TestNode } from './pool.js';
import { containerdOn } from './pulumi.js';

// A node that also runs containers outside Kubernetes (podman, a CI runner): their network "podman" through libcni
// (cnitool, the reference front end), with its own cache entries, host-local reservations and network namespaces.
// The upgrade tears down and clears kubelet's pods' state only, and says what it left alone. On both flavours: the
// docker node's kubenet keeps libcni's cache elsewhere, with loopback entries of its own (kubenet-loopback).
const NODES = useNodes('docker', 'containerd');
const CONTAINERS = [1, 2, 3].map((i) => `podman-${i}`);
const CONF = '/etc/cni/net.d/87-podman.conflist';
const conflist = JSON.stringify({
  cniVersion: '1.0.0',
  name: 'podman',
  plugins: [{ type: 'bridge', bridge: 'cni-podman0', isGateway: true, ipMasq: true, ipam: { type: 'host-local', ranges: [[{ subnet: '10.88.0.0/16' }]] } }],
});
const cni = (command: 'add' | 'del', netns: string) =>
  `CNI_PATH=$(for d in /opt/cni/bin /usr/lib/cni; do [ -x $d/bridge ] && echo $d && break; done) NETCONFPATH=/etc/cni/net.d /usr/local/bin/cnitool ${command} podman /var/run/netns/${netns}`;

/** podman's side of the node: each netns with its address, the reservations and the cache entries. */
const podmanState = (t: TestNode) =>
  t.sh(`
    for n in ${CONTAINERS.join(' ')}; do printf '%s %s\\n' "$n" "$(ip -n "$n" -4 -o addr show dev eth0 | awk '{print $4}')"; done
    ls /var/lib/cni/networks/podman | sort
    ls /var/lib/cni/results | grep '^podman-' | sort`);

/** Each container's process (what lives in its network namespace, as a real container's does), by node. */
const processes = new Map<string, string[]>();

beforeAll(async () => {
  for (const t of NODES) {
    await t.put(bed().cnitool, '/usr/local/bin/cnitool');
    await t.sh(`printf '%s' '${conflist}' > ${CONF}`);
    const pids: string[] = [];
    for (const n of CONTAINERS) {
      await t.sh(`ip netns add ${n} && ${cni('add', n)} >/dev/null`);
      pids.push((await t.sh(`setsid ip netns exec ${n} sleep 100000 </dev/null >/dev/null 2>&1 & echo $!`)).trim());
    }
    processes.set(t.name, pids);
  }
});

afterAll(async () => {
  for (const t of NODES) {
    await t.sh(`kill ${(processes.get(t.name) ?? []).join(' ')} 2>/dev/null; true`);
    for (const n of CONTAINERS) await t.sh(`${cni('del', n)}; ip netns delete ${n}`).catch(() => undefined);
    await t.sh(`rm -rf ${CONF} /var/lib/cni/networks/podman /usr/local/bin/cnitool; ip link delete cni-podman0 2>/dev/null || true`);
  }
});

describe.each([0, 1])('a node with a CNI user that is not Kubernetes (%#: docker, then containerd)', (i) => {
  it('is upgraded; podman\'s addresses, reservations, cache entries and namespaces are left as they were, and said', async () => {
    const t = NODES[i]!;
    const before = await podmanState(t);
    expect(before).toMatch(/^podman-1 10\.88\.\d+\.\d+\/16$/m);
    expect(before.split('\n').filter((l) => l.startsWith('podman-') && l.endsWith('-eth0'))).toHaveLength(3);
    const target = bed().containerd.new;
    const result = await upgradeNode([t.name, '--to', `containerd=${target}`, '--output', 'json', ...DRAIN_FLAGS, ...t.flags]);
    expect(result.code, result.stderr).toBe(0);
    expect(await containerdOn(t)).toBe(target);
    const steps = report(result).steps as Array<{ name: string; summary: string }>;
    const said = "left alone: 3 CNI cache entries and 1 host-local directory (3 reservation(s)) of networks that are not Kubernetes' (podman); 3 network namespace(s) not named as kubelet's runtime names its sandboxes' (podman-1, podman-2, podman-3)";
    expect(steps.find((s) => s.name === 'teardown-sandboxes')!.summary).toContain(said);
    expect(steps.find((s) => s.name === 'clear-state')!.summary).toContain(said);
    // Kubernetes' own state was torn down and cleared as always: the bed's node agent pod came back on a new sandbox.
    expect(steps.find((s) => s.name === 'teardown-sandboxes')!.summary).toMatch(/^[1-9]\d* attachment\(s\) torn down/);
    expect(await podmanState(t)).toBe(before);

    const audit = await nodeAudit(t);
    expect(audit.code, audit.stderr).toBe(0);
    const parsed = JSON.parse(audit.stdout);
    expect(parsed.verdict).toBe('clean');
    expect(parsed.leftAlone).toEqual([said]);
  });
});
