import { describe, expect, it } from 'vitest';
import { bedCpuLines, bedCpuSpent } from '../../integration/bed-cpu.js';

describe("the suite's table of the bed's CPU", () => {
  it('counts what each spent between readings, a container new since the first (a node recreated) from zero, and only counts those under 1 s', () => {
    const before = { nodes: { 'tb-docker-node-1 aaa': 100, 'nm-kind-worker bbb': 50 }, daemons: { etcd: 10, 'kube-apiserver': 40, 'ssh-relay-docker-node-1': 1 } };
    const after = {
      nodes: { 'tb-docker-node-1 aaa': 160, 'tb-docker-node-2 ccc': 30, 'nm-kind-worker bbb': 55 },
      daemons: { etcd: 25, 'kube-apiserver': 100, prometheus: 4, 'ssh-relay-docker-node-1': 1.2 },
    };
    expect(bedCpuLines(bedCpuSpent(before, after))).toEqual([
      "  the pool's nodes: 90 s (tb-docker-node-1 60, tb-docker-node-2 30)",
      "  the kind cluster's nodes: 5 s",
      "  the bed's daemons: 79 s (kube-apiserver 60, etcd 15, prometheus 4, 1 more under 1)",
    ]);
  });

  it('counts a node whose counter went back (rebooted: its container started again) from zero, never below', () => {
    const spent = bedCpuSpent({ nodes: { 'tb-docker-node-3 aaa': 300 }, daemons: {} }, { nodes: { 'tb-docker-node-3 aaa': 31 }, daemons: {} });
    expect(bedCpuLines(spent)[0]).toBe("  the pool's nodes: 31 s (tb-docker-node-3 31)");
  });

  it('says the nodes were not read when no container was, never that they took 0 s', () => {
    const none = { nodes: {}, daemons: { etcd: 1 } };
    expect(bedCpuLines(bedCpuSpent(none, { nodes: {}, daemons: { etcd: 3 } }))).toEqual([
      "  the nodes: not read (the bed's dockerd did not answer)",
      "  the bed's daemons: 2 s (etcd 2)",
    ]);
  });
});
