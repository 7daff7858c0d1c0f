import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { bed, kubectlJson } from './bed.js';
import { pinnedDeployment, sandboxIds } from './fixtures.js';
import { useNamespace, useNodes } from './pool.js';

const exec = promisify(execFile);
const ssh = (port: number, user: string, command: string) =>
  exec('ssh', ['-i', bed().sshKey, '-o', `UserKnownHostsFile=${bed().knownHosts}`, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes', '-p', String(port), `${user}@127.0.0.1`, command]).then((r) => r.stdout);

describe('the local test cluster', () => {
  const [docker, containerd] = useNodes('docker', 'containerd');
  const ns = useNamespace();

  // Other files upgrade, drain and replace the other pool nodes meanwhile: only the leased ones are looked at closely.
  it('has the pool both flavours, each leased node Ready with a /25 PodCIDR, on a real kubelet 1.32 and its runtime', async () => {
    expect(new Set(bed().nodes.map((n) => n.flavour))).toEqual(new Set(['docker', 'containerd']));
    for (const t of [docker, containerd]) {
      const n = await kubectlJson('get', 'node', t.name);
      expect(n.metadata.labels['node-maint.io/testbed'], t.name).toBe('pool');
      expect(n.status.conditions.find((c: any) => c.type === 'Ready').status, t.name).toBe('True');
      expect(n.spec.podCIDR, t.name).toMatch(/\/25$/);
      expect(n.status.nodeInfo.kubeletVersion, t.name).toMatch(/^v1\.32\./);
      expect(n.status.nodeInfo.containerRuntimeVersion, t.name).toMatch(t.flavour === 'docker' ? /^docker:\/\/20\.10/ : /^containerd:\/\/1\.6\.20/);
    }
  });

  it('gives pods on a docker node kubenet IPs with host-local files, CNI cache entries and cri-dockerd checkpoints', async () => {
    const pods = await pinnedDeployment(ns.name, 'on-docker', docker.name, 2);
    const sandboxes = await sandboxIds(docker);
    for (const pod of pods) {
      const owner = (await docker.sh(`head -n1 /var/lib/cni/networks/kubenet/${pod.status.podIP} | tr -d '\\r'`)).trim();
      expect(sandboxes).toContain(owner);
      expect(await docker.sh(`ls /var/lib/cni/cache/results/kubenet-${owner}-eth0 /var/lib/cri-dockerd/sandbox/${owner}`)).toContain(owner);
    }
  });

  it('gives pods on a containerd node IPs from containerd\'s CNI template (bridge, host-local) with libcni cache entries', async () => {
    const pods = await pinnedDeployment(ns.name, 'on-containerd', containerd.name, 2);
    const sandboxes = await sandboxIds(containerd);
    const conflist = JSON.parse(await containerd.sh('cat /etc/cni/net.d/10-containerd-net.conflist'));
    expect(conflist.plugins[0].ipam.ranges[0][0].subnet).toBe((await kubectlJson('get', 'node', containerd.name)).spec.podCIDR);
    for (const pod of pods) {
      const owner = (await containerd.sh(`head -n1 /var/lib/cni/networks/containerd-net/${pod.status.podIP} | tr -d '\\r'`)).trim();
      expect(sandboxes).toContain(owner);
      expect(await containerd.sh(`ls /var/lib/cni/results/containerd-net-${owner}-eth0`)).toContain(owner);
    }
  });

  it('reaches each node by SSH with the bed key, as root and as the sudo user, under real systemd', async () => {
    for (const t of [docker, containerd]) {
      expect((await ssh(t.sshPort, 'root', 'hostname; ps -p 1 -o comm=; systemctl is-active kubelet')).trim().split('\n')).toEqual([t.name, 'systemd', 'active']);
      expect((await ssh(t.sshPort, bed().sshUser, 'sudo -n systemctl is-active kubelet')).trim()).toBe('active');
      await expect(ssh(t.sshPort, bed().sshUser, 'sudo -n -k true </dev/null; echo $HOME')).resolves.toContain(`/home/${bed().sshUser}`);
    }
  });

  it('refuses password logins and unknown keys', async () => {
    await expect(exec('ssh', ['-o', `UserKnownHostsFile=${bed().knownHosts}`, '-o', 'BatchMode=yes', '-o', 'PubkeyAuthentication=no', '-p', String(docker.sshPort), 'root@127.0.0.1', 'true'])).rejects.toThrow(/Permission denied/);
  });

  it('holds the runtime packages of the local apt repository, both versions visible to apt', async () => {
    expect((await docker.sh('apt-mark showhold')).split('\n').filter(Boolean).sort()).toEqual(['containerd', 'docker.io']);
    expect((await containerd.sh('apt-mark showhold')).trim()).toBe('containerd');
    const policy = await containerd.sh('apt-cache madison containerd');
    for (const v of [bed().containerd.old, bed().containerd.new, bed().containerd.faulty]) expect(policy).toContain(v);
  });

  // A node's shutdown stops every process of the node before its SIGTERM (systemd-shutdown's kill(-1, SIGSTOP)): a
  // test's command caught in it must go on to its end, or the node's reboot cannot end (test 52 once waited 15 minutes).
  it('runs a script stopped midway, as a node\'s shutdown stops every process, to its end', async () => {
    expect((await docker.sh('kill -STOP $$; echo resumed')).trim()).toBe('resumed');
  }, 30_000);

  it('says what runs', async () => {
    // Exit 1 when any part is stopped, and files beside this one stop some on purpose (node-ipam, a node's kubelet).
    const status = await exec('bash', ['testbed/status']).then((r) => r.stdout, (e) => e.stdout as string);
    for (const part of ['etcd', 'kube-apiserver', `pool node ${docker.name}`, `pool node ${containerd.name}`]) expect(status).toMatch(new RegExp(`${part}\\s+running`));
    expect(status).toMatch(/node-ipam\s+(running|stopped)/);
  });
});
