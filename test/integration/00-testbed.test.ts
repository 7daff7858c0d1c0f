import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { bed, kubectlJson, sh } from './bed.js';
import { onFleetHost } from './pulumi.js';

const exec = promisify(execFile);
const ssh = (port: number, user: string, command: string) =>
  exec('ssh', ['-i', bed().sshKey, '-o', `UserKnownHostsFile=${bed().knownHosts}`, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes', '-p', String(port), `${user}@127.0.0.1`, command]).then((r) => r.stdout);

describe('the local test cluster', () => {
  it('has the real node and the fleet nodes Ready, each with a /25 PodCIDR', async () => {
    const nodes = (await kubectlJson('get', 'nodes')).items.filter((n: any) => bed().nodes.some((b) => b.name === n.metadata.name));
    expect(nodes.map((n: any) => n.metadata.name).sort()).toEqual(bed().nodes.map((n) => n.name).sort());
    for (const n of nodes) {
      expect(n.status.conditions.find((c: any) => c.type === 'Ready').status, n.metadata.name).toBe('True');
      expect(n.spec.podCIDR, n.metadata.name).toMatch(/\/25$/);
    }
    const real = nodes.find((n: any) => n.metadata.name === bed().realNode);
    expect(real.status.nodeInfo.kubeletVersion).toMatch(/^v1\.32\./);
    expect(real.status.nodeInfo.containerRuntimeVersion).toMatch(/^docker:\/\/20\.10/);
  });

  it('gives pods on the real node kubenet IPs with host-local files, CNI cache entries and cri-dockerd checkpoints', async () => {
    const pods = (await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${bed().realNode}`)).items.filter((p: any) => p.status.podIP);
    expect(pods.length).toBeGreaterThan(0);
    for (const pod of pods) {
      const owner = (await sh(`head -n1 /var/lib/cni/networks/kubenet/${pod.status.podIP} | tr -d '\\r'`)).trim();
      expect(await sh(`ls /var/lib/cni/cache/results/kubenet-${owner}-eth0 /var/lib/cri-dockerd/sandbox/${owner}`)).toContain(owner);
    }
  });

  it('reaches the real node by SSH with the bed key, as root and as the sudo user, and systemctl is-active kubelet is active', async () => {
    const port = bed().nodes.find((n) => n.name === bed().realNode)!.sshPort;
    expect((await ssh(port, 'root', 'systemctl is-active kubelet')).trim()).toBe('active');
    expect((await ssh(port, bed().sshUser, 'sudo -n systemctl is-active kubelet')).trim()).toBe('active');
    await expect(ssh(port, bed().sshUser, 'sudo -n -k true </dev/null; echo $HOME')).resolves.toContain(`/home/${bed().sshUser}`);
  });

  it('refuses password logins and unknown keys', async () => {
    const port = bed().nodes.find((n) => n.name === bed().realNode)!.sshPort;
    await expect(exec('ssh', ['-o', `UserKnownHostsFile=${bed().knownHosts}`, '-o', 'BatchMode=yes', '-o', 'PubkeyAuthentication=no', '-p', String(port), 'root@127.0.0.1', 'true'])).rejects.toThrow(/Permission denied/);
  });

  it('has fleet hosts with containerd from apt, real host-local allocations, by SSH and by docker exec', async () => {
    for (const n of bed().nodes.filter((x) => x.container)) {
      expect((await ssh(n.sshPort, 'root', 'hostname')).trim()).toBe(n.name);
      expect(await onFleetHost(n.name, "dpkg-query -W -f='${Version}' containerd")).toMatch(/^1\.6\.20~ds1-1\+deb12u[23]$/);
      const pods = (await kubectlJson('get', 'pods', '-A', '--field-selector', `spec.nodeName=${n.name}`)).items.filter((p: any) => p.status.podIP && !p.spec.hostNetwork);
      for (const pod of pods) expect(await onFleetHost(n.name, `ls /var/lib/cni/networks/containerd-net/${pod.status.podIP}`)).toContain(pod.status.podIP);
    }
  });

  it('stops and starts daemons for real through the systemctl stand-in', async () => {
    const pid = (await sh('systemctl show -p MainPID kubelet')).trim().split('=')[1];
    expect(Number(pid)).toBeGreaterThan(0);
    try {
      await sh('systemctl stop kubelet');
      // Gone, or a zombie its parent has yet to reap: either way it no longer runs.
      const state = await sh(`systemctl is-active kubelet; s=$(awk '{print $3}' /proc/${pid}/stat 2>/dev/null); [ -z "$s" ] || [ "$s" = Z ] && echo gone || echo running`);
      expect(state).toBe('inactive\ngone\n');
    } finally {
      await sh('systemctl start kubelet');
    }
    expect((await sh('systemctl is-active kubelet')).trim()).toBe('active');
  });

  it('says what runs', async () => {
    const status = await sh('bash testbed/status');
    for (const part of ['etcd', 'kube-apiserver', 'kwok', 'node unit kubelet', 'fleet host fleet-1']) expect(status).toMatch(new RegExp(`${part}\\s+running`));
  });
});
