// The node's state as one round trip brings it back. Pure data: detectors and planners work on this.
import type { Route } from '../cni/routes.js';

export type RuntimeFlavor = 'cri-dockerd' | 'dockershim' | 'containerd' | 'unknown';
export type NetworkMode = 'kubenet' | 'cni' | 'calico' | 'unknown';

export interface ServiceState {
  unit: string;
  loaded: boolean;
  active: boolean;
  mainPid: number;
  execStart: string;
}

export interface StateFile {
  path: string;
  name: string;
  size: number;
  /** Seconds since the epoch, on the node's clock. */
  mtime: number;
  /** Absent when the file was too large to read or unreadable. */
  content?: string;
}

/** One host-local reservation: /var/lib/cni/networks/<network>/<ip>. */
export interface IpReservation {
  network: string;
  ip: string;
  path: string;
  /** First line of the file: the container ID (both formats). */
  containerId: string;
  /** Second line since plugins v0.8.0; null for the old ID-only format. */
  ifName: string | null;
  mtime: number;
}

export interface IpamDirectory {
  network: string;
  path: string;
  reservations: IpReservation[];
  lastReserved: Record<string, string>;
}

/** A libcni result cache entry: cniCacheV1 (carries the config) or the older result-only form. */
export interface CniCacheEntry {
  path: string;
  format: 'cniCacheV1' | 'legacy' | 'unreadable';
  networkName: string;
  containerId: string;
  ifName: string;
  netns?: string;
  /** The network config (conf or conflist JSON) the ADD ran with, base64 as libcni stores it; cniCacheV1 only. */
  configBase64?: string;
  cniArgs?: Array<[string, string]>;
  capabilityArgs?: Record<string, unknown>;
  result?: unknown;
  /** IPs the cached result holds, without prefix length. */
  ips: string[];
  mtime: number;
}

export interface SandboxCheckpoint {
  path: string;
  kind: 'cri-dockerd' | 'dockershim';
  sandboxId: string;
  podName?: string;
  namespace?: string;
  hostNetwork: boolean;
  mtime: number;
}

export interface Sandbox {
  id: string;
  ready: boolean;
  podUid: string;
  namespace: string;
  name: string;
  /** The sandbox process, for its netns; 0 when not running. */
  pid: number;
  createdAt: string;
}

export interface RuntimeContainer {
  id: string;
  sandboxId: string;
  state: 'running' | 'created' | 'exited' | 'unknown';
  podUid: string;
  namespace: string;
  podName: string;
  name: string;
}

/** A package as dpkg records it. */
export interface PackageRecord {
  version: string;
  /** dpkg's selection is hold (apt-mark hold): kept through our installs and rollbacks. */
  held: boolean;
  /** installed: configured (pending triggers included); the rest are what a dpkg run interrupted or failed leaves. */
  status: 'installed' | 'half-installed' | 'unpacked' | 'half-configured' | 'config-files' | 'not-installed';
}

export interface PackageDb {
  records: Record<string, PackageRecord>;
  /** dpkg was interrupted (its journal in /var/lib/dpkg/updates is not empty): apt refuses to work until repaired. */
  interrupted: boolean;
  /** Processes holding the dpkg or apt lock now (unattended-upgrades, a manual apt). */
  lockHolders: Array<{ pid: number; command: string }>;
}

export interface NodeState {
  hostname: string;
  /** The node's clock when the state was taken, seconds since the epoch. */
  now: number;
  uid: number;
  os: { id: string; versionId: string; prettyName: string };
  tools: Set<string>;
  packageManager: 'apt' | null;
  /** Installed package versions by name: cleanly installed ones only (a half-installed package is not here). */
  packages: Record<string, string>;
  packageDb: PackageDb;
  services: Record<string, ServiceState>;
  /**
   * The systemd unit kubelet runs under, read from its cgroup: undefined when no kubelet runs, null when it runs
   * outside any service (started by hand, a scope), which node-maint cannot stop and start again.
   */
  /** The unit that runs kubelet (systemd's service with kubelet as main PID, else its cgroup's); transient: systemd-run's, no unit file. */
  kubeletUnit?: { unit: string | null; pid: number; cgroup: string; transient?: boolean; fragmentPath?: string };
  /** Command lines of running daemons (kubelet, cri-dockerd, containerd, dockerd), by process name. */
  processes: Record<string, string>;
  /** kubelet flags kept outside its unit: kubeadm-flags.env, /etc/default/kubelet, its config file's runtime fields. */
  kubeletFlags: string[];
  diskFreeBytes: Record<string, number>;
  cniBinDirs: string[];
  cniConfFiles: StateFile[];
  /** Where host-local keeps reservations: its default dataDir and each one a CNI config names. */
  ipamRoots: string[];
  /** dataDirs a CNI config names that are not plain absolute paths (relative, `..`, `/`): never looked at or cleared. */
  refusedDataDirs: string[];
  ipam: IpamDirectory[];
  cniCache: CniCacheEntry[];
  /** Cache entries and host-local directories of CNI users other than kubelet's runtime (podman): never touched. */
  foreign: { cniCache: CniCacheEntry[]; ipam: IpamDirectory[] };
  checkpoints: SandboxCheckpoint[];
  /** Whether the runtime answered; when false, sandboxes and containers are unknown rather than absent. */
  runtimeReachable: boolean;
  sandboxes: Sandbox[];
  containers: RuntimeContainer[];
  netns: string[];
  /** Per pinned netns: seconds since it was pinned and how many processes live in it. */
  netnsActivity: Record<string, { ageSeconds: number; processes: number }>;
  veths: Array<{ name: string; master: string | null }>;
  /** The IPv4 main routing table; undefined when it could not be read. */
  routes?: Route[];
  backups: string[];
}
