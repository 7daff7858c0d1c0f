import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectNetwork, ipamRefusal } from '../../../src/node/cni/network-mode.js';
import type { NodeState } from '../../../src/node/state/types.js';
import { detectFlavor, runtimeUnits } from '../../../src/node/runtime/flavor.js';
import { flagValue, kubeletCommandLine, parseKubeletFlags } from '../../../src/node/state/command-lines.js';
import { FILES_FUNCTION, frameScript } from '../../../src/node/state/gather.js';
import { isPlainAbsolute, parseNodeState, splitSections } from '../../../src/node/state/parse.js';

// Fixtures are real outputs of the gather script on the test bed's real node and on a fleet host.
const realNode = parseNodeState(readFileSync('test/fixtures/real-node-state.txt', 'utf8'));
const fleetHost = parseNodeState(readFileSync('test/fixtures/fleet-host-state.txt', 'utf8'));

describe('parseNodeState on a cri-dockerd + kubenet node', () => {
  it('reads packages, units and the runtime flavor', () => {
    expect(realNode.packageManager).toBe('apt');
    expect(realNode.packages.containerd).toMatch(/^1\.6\.20~ds1-1\+deb12u[23]$/);
    expect(realNode.services.kubelet).toMatchObject({ loaded: true, active: true });
    expect(detectFlavor(realNode)).toBe('cri-dockerd');
    expect(runtimeUnits('cri-dockerd')).toEqual(['containerd', 'docker', 'cri-docker']);
    expect(detectNetwork(realNode, 'cri-dockerd')).toEqual({ mode: 'kubenet', networkName: 'kubenet', binDir: '/usr/lib/cni', ipam: 'host-local' });
  });
  it('pairs every reservation, cache entry and checkpoint with a sandbox', () => {
    const ids = new Set(realNode.sandboxes.map((s) => s.id));
    expect(realNode.runtimeReachable).toBe(true);
    expect(realNode.ipam[0]!.network).toBe('kubenet');
    for (const r of realNode.ipam[0]!.reservations) {
      expect(r.ifName).toBe('eth0');
      expect(ids.has(r.containerId)).toBe(true);
    }
    for (const e of realNode.cniCache) {
      expect(e.format).toBe('cniCacheV1');
      expect(ids.has(e.containerId)).toBe(true);
    }
    expect(realNode.checkpoints.map((c) => c.sandboxId).sort()).toEqual([...ids].sort());
  });
});

describe('parseNodeState on a containerd fleet host', () => {
  it('finds the conflist network and the libcni cache with netns', () => {
    expect(detectFlavor(fleetHost)).toBe('containerd');
    expect(detectNetwork(fleetHost, 'containerd')).toMatchObject({ mode: 'cni', networkName: 'containerd-net', ipam: 'host-local' });
    expect(fleetHost.cniCache.every((e) => e.netns?.startsWith('/var/run/netns/cni-'))).toBe(true);
    expect(fleetHost.netns.length).toBe(fleetHost.cniCache.length);
  });
});

describe('parseNodeState where a network keeps host-local state elsewhere (kindnetd: dataDir /run/cni-ipam-state)', () => {
  it('reads reservations under every dataDir the configs name, and only there', () => {
    const id = 'a'.repeat(64);
    const state = parseNodeState([
      '@@dir /etc/cni/net.d', '|10-kindnet.conflist\t90\t1700000000', '@@file /etc/cni/net.d/10-kindnet.conflist', '|{"name": "kindnet", "plugins": [{"type": "ptp", "ipam": {"type": "host-local", "dataDir": "/run/cni-ipam-state"}}]}',
      '@@ipam-roots', '|/run/cni-ipam-state', '|/var/lib/cni/networks',
      '@@dir /run/cni-ipam-state/kindnet', '|10.244.1.7\t66\t1700000000', '@@file /run/cni-ipam-state/kindnet/10.244.1.7', `|${id}`, '|eth0',
      '@@dir /run/elsewhere/kindnet', '|10.244.1.8\t66\t1700000000', '@@file /run/elsewhere/kindnet/10.244.1.8', `|${id}`, '|eth0',
      '@@end', '',
    ].join('\n'));
    expect(state.ipamRoots).toEqual(['/run/cni-ipam-state', '/var/lib/cni/networks']);
    expect(state.ipam.map((d) => d.path)).toEqual(['/run/cni-ipam-state/kindnet']);
    expect(state.ipam[0]!.reservations[0]).toMatchObject({ network: 'kindnet', ip: '10.244.1.7', containerId: id });
  });
});

describe('kubelet flags where kubeadm keeps them', () => {
  // kubeadm's drop-in runs `kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS`.
  const kubeadmNode = (kubelet: string) => ({
    ...fleetHost,
    services: { ...fleetHost.services, kubelet: { ...fleetHost.services.kubelet!, execStart: '/usr/bin/kubelet $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS' }, 'cri-docker': { ...fleetHost.services.kubelet!, loaded: true } },
    processes: {},
    kubeletFlags: parseKubeletFlags([kubelet, 'KUBELET_EXTRA_ARGS='], ['containerRuntimeEndpoint: unix:///run/containerd/containerd.sock']),
  });
  it('reads kubeadm-flags.env and the config file, so the runtime endpoint decides the flavor (not a leftover cri-docker unit)', () => {
    const node = kubeadmNode('KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.10 --node-ip=10.0.0.4"');
    expect(kubeletCommandLine(node)).toContain('--pod-infra-container-image=registry.k8s.io/pause:3.10');
    expect(flagValue(kubeletCommandLine(node), 'container-runtime-endpoint')).toBe('unix:///run/containerd/containerd.sock');
    expect(detectFlavor(node)).toBe('containerd');
  });
  it('reads the gathered sections', () => {
    const state = parseNodeState("@@kubelet-env\n|KUBELET_KUBEADM_ARGS='--container-runtime-endpoint=unix:///run/cri-dockerd.sock'\n@@kubelet-config\n|podInfraContainerImage: \"k8s.gcr.io/pause:3.9\"\n@@end\n");
    expect(state.kubeletFlags).toEqual(['--container-runtime-endpoint=unix:///run/cri-dockerd.sock', '--pod-infra-container-image=k8s.gcr.io/pause:3.9']);
  });
});

describe('the unit kubelet runs under, from systemd and its cgroup', () => {
  const read = (line: string) => parseNodeState(`@@kubelet-unit\n${line}@@end\n`).kubeletUnit;
  it('names the service, however it is named and wherever its cgroup sits', () => {
    expect(read('|812\tsnap.kubelet.daemon.service\t/system.slice/snap.kubelet.daemon.service\tsnap.kubelet.daemon.service\tno\t/etc/systemd/system/snap.kubelet.daemon.service\n')).toEqual({
      pid: 812, unit: 'snap.kubelet.daemon', cgroup: '/system.slice/snap.kubelet.daemon.service', transient: false, fragmentPath: '/etc/systemd/system/snap.kubelet.daemon.service',
    });
    expect(read('|90\tkubelet-custom.service\t/docker/ab12/system.slice/kubelet-custom.service\t\t\t\n')?.unit).toBe('kubelet-custom');
  });
  it('believes systemd over the cgroup: kubelet moved out of its unit\'s cgroup by --kubelet-cgroups is still its unit\'s', () => {
    expect(read('|77\t\t/kubelet.slice/kubelet\tkubelet.service\tno\t/lib/systemd/system/kubelet.service\n')).toMatchObject({ pid: 77, unit: 'kubelet', transient: false });
  });
  it('says when the unit is systemd-run\'s transient one, which no unit file can start again', () => {
    expect(read('|55\tkubelet-x.service\t/system.slice/kubelet-x.service\tkubelet-x.service\tyes\t\n')).toMatchObject({ unit: 'kubelet-x', transient: true, fragmentPath: '' });
  });
  it('tells a kubelet outside any service (null) from no kubelet at all (undefined)', () => {
    expect(read('|4242\t\t/user.slice/session-3.scope\t\t\t\n')).toEqual({ pid: 4242, unit: null, cgroup: '/user.slice/session-3.scope', transient: false, fragmentPath: '' });
    expect(read('')).toBeUndefined();
  });
});

describe('docker and containerd on one node', () => {
  // The fleet host's fixture, with one containerd sandbox in crictl's list.
  const pod = { id: 'c'.repeat(64), state: 'SANDBOX_READY', metadata: { name: 'web-1', namespace: 'demo', uid: 'u-1' }, createdAt: '1700000000000000000' };
  const fixture = readFileSync('test/fixtures/fleet-host-state.txt', 'utf8').replace(/@@crictl-pods\n[\s\S]*?(?=@@crictl-containers)/, `@@crictl-pods\n|${JSON.stringify({ items: [pod] })}\n`);
  const withDocker = (text: string) => text.replace('@@netns', '@@docker up\n@@netns');
  it('lists the sandboxes of both runtimes (a docker for builds hides none of kubelet\'s containerd sandboxes)', () => {
    const both = parseNodeState(withDocker(fixture));
    expect(both.sandboxes.map((x) => x.id)).toEqual([pod.id]);
    expect(both.runtimeReachable).toBe(true);
  });
  it('fails closed when kubelet\'s runtime did not answer, even though docker did', () => {
    const criGone = parseNodeState(withDocker(fixture.replace(/@@crictl-pods[\s\S]*?(?=@@netns)/, '')));
    expect(criGone.sandboxes).toEqual([]);
    expect(criGone.runtimeReachable).toBe(false);
  });
});

describe('splitSections', () => {
  it('keeps file blocks with their directory and refuses truncated output', () => {
    const s = splitSections('@@dir /x\n|a\t1\t2\n@@file /x/a\n|line1\n|line2\n@@end\n');
    expect(s[0]!.files.get('/x/a')).toEqual(['line1', 'line2']);
    expect(() => parseNodeState('@@meta\n|hostname=x\n')).toThrow(/truncated/);
  });
  it('frames the script\'s output once: a marker after content without a newline still starts a section, content never does', () => {
    const raw = '@@k1 meta\n|a line\n@@end\nlast line, no newline@@k1 dir /x\nname\t1\t2\n@@k2 end\n@@k1 end\n';
    const framed = execFileSync('sh', ['-c', frameScript('k1')], { input: raw, encoding: 'utf8' });
    expect(framed).toBe('@@meta\n||a line\n|@@end\n|last line, no newline\n@@dir /x\n|name\t1\t2\n|@@k2 end\n@@end\n');
    expect(splitSections(framed).map((s) => s.name)).toEqual(['meta', 'dir', 'end']);
  });
  it('reads many directories in one find and one awk: each one there with its listing and small files, none missing', () => {
    const root = mkdtempSync(join(tmpdir(), 'node-maint-files-'));
    mkdirSync(join(root, 'net'));
    mkdirSync(join(root, 'empty'));
    writeFileSync(join(root, 'net', '10.0.0.2'), 'abc\neth0');
    writeFileSync(join(root, 'net', 'lock'), '');
    writeFileSync(join(root, 'net', 'big'), 'x'.repeat(300 * 1024));
    const script = `M='@@k1 '\n${FILES_FUNCTION}\nfiles ${root}/net ${root}/missing ${root}/empty | ${frameScript('k1')}`;
    const sections = splitSections(execFileSync('sh', ['-c', script], { encoding: 'utf8' }));
    rmSync(root, { recursive: true });
    expect(sections.map((s) => `${s.name} ${s.arg}`)).toEqual([`dir ${root}/net`, `dir ${root}/empty`]);
    expect(sections[0]!.lines.map((l) => l.split('\t').slice(0, 2).join(' ')).sort()).toEqual(['10.0.0.2 8', `big ${300 * 1024}`, 'lock 0']);
    expect([...sections[0]!.files]).toEqual([[`${root}/net/10.0.0.2`, ['abc', 'eth0']]]);
    expect(sections[1]!.lines).toEqual([]);
  });
});

describe('who allocates pod IPs, and whether the proof can read it', () => {
  const withConf = (content: string) => ({ ...fleetHost, cniConfFiles: [{ name: '00-net.conflist', content }] }) as NodeState;
  const net = (content: string) => detectNetwork(withConf(content), 'containerd');
  it('reads the IPAM the first config names, or the plugin that allocates itself', () => {
    expect(net('{"name":"w","plugins":[{"type":"macvlan","ipam":{"type":"whereabouts","range":"10.1.0.0/16"}}]}')).toMatchObject({ networkName: 'w', ipam: 'whereabouts' });
    expect(net('{"name":"k8s-pod-network","plugins":[{"type":"calico","datastore_type":"kubernetes","ipam":{"type":"calico-ipam"}},{"type":"portmap"}]}')).toMatchObject({ mode: 'calico', ipam: 'calico-ipam' });
    // The plugin's default datastore is etcd: its IPAM is not in the API.
    expect(net('{"name":"k8s-pod-network","plugins":[{"type":"calico","ipam":{"type":"calico-ipam"}}]}')).toMatchObject({ mode: 'calico', ipam: 'calico-ipam (etcd datastore)' });
    expect(net('{"name":"cilium","plugins":[{"type":"cilium-cni"}]}')).toMatchObject({ ipam: 'plugin cilium-cni' });
    expect(net('{"cniVersion":"0.3.1","name":"single","type":"bridge","ipam":{"type":"host-local","subnet":"10.0.0.0/24"}}')).toMatchObject({ ipam: 'host-local' });
  });
  it('refuses an IPAM it cannot read unless the weaker proof is asked for, naming it and the flag', () => {
    expect(ipamRefusal('n', net('{"name":"c","plugins":[{"type":"calico","ipam":{"type":"calico-ipam"}}]}'), 'ipam')).toMatch(/^n's CNI network c allocates pod IPs with the calico-ipam \(etcd datastore\) IPAM, which node-maint cannot read \(it reads host-local, whereabouts, calico-ipam\): .* give --proof network-only/);
    expect(ipamRefusal('n', net('{"name":"c","plugins":[{"type":"calico","datastore_type":"kubernetes","ipam":{"type":"calico-ipam"}}]}'), 'ipam')).toBeUndefined();
    expect(ipamRefusal('n', net('{"name":"w","plugins":[{"type":"macvlan","ipam":{"type":"whereabouts"}}]}'), 'ipam')).toBeUndefined();
    expect(ipamRefusal('n', net('{"name":"cilium","plugins":[{"type":"cilium-cni"}]}'), 'ipam')).toContain('with the cilium-cni plugin itself (no ipam section)');
    expect(ipamRefusal('n', net('{"name":"c","plugins":[{"type":"calico","ipam":{"type":"calico-ipam"}}]}'), 'network-only')).toBeUndefined();
    expect(ipamRefusal('n', detectNetwork(realNode, 'cri-dockerd'), 'ipam')).toBeUndefined();
  });
});

describe('a runtime whose listing failed is no answer, never "no sandboxes"', () => {
  const text = readFileSync('test/fixtures/fleet-host-state.txt', 'utf8');
  it('a crictl list cut off or missing makes the runtime unreachable', () => {
    expect(parseNodeState(text).runtimeReachable).toBe(true);
    const cut = text.replace(/@@crictl-pods\n\|\{\n\|  "items": \[\n\|  \]\n\|\}\n/, '@@crictl-pods\n|{\n|  "items": [\n');
    expect(cut).not.toBe(text);
    expect(parseNodeState(cut)).toMatchObject({ runtimeReachable: false, sandboxes: [] });
    const missing = text.replace(/@@crictl-pods\n[\s\S]*?(?=@@netns)/, '');
    expect(parseNodeState(missing).runtimeReachable).toBe(false);
  });
});

describe('host-local dataDirs node-maint will touch', () => {
  it('only plain absolute paths; the others are reported for preflight to refuse', () => {
    for (const ok of ['/run/cni-ipam-state', '/var/lib/cni/networks/', '/data/.hidden-ipam']) expect(isPlainAbsolute(ok)).toBe(true);
    for (const bad of ['/var/lib/../../etc', 'relative/dir', '/', '//', '/var/./lib', '/run/ipam dir', '/x/..']) expect(isPlainAbsolute(bad)).toBe(false);
    const state = parseNodeState(['@@ipam-datadirs', '|/run/cni-ipam-state', '|/var/lib/../../etc', '|ipam', '@@ipam-roots', '|/run/cni-ipam-state', '|/var/lib/cni/networks', '@@end', ''].join('\n'));
    expect(state.refusedDataDirs).toEqual(['/var/lib/../../etc', 'ipam']);
    expect(state.ipamRoots).toEqual(['/run/cni-ipam-state', '/var/lib/cni/networks']);
  });
});
