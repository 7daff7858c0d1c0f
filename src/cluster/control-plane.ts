import type { Cluster } from './api.js';
import { listAll } from './list.js';
import { isPodReady } from './pods.js';
import type { Node, Pod } from './types.js';

// A control-plane node may be maintained (--allow-control-plane) only when the run does not saw off the branch it
// sits on: its teardown removes the static pods' sandboxes after kubelet is stopped, so the apiserver the run renews
// its Lease through, or the etcd member quorum needs, would go with them, and kubelet (which brings them back) stays
// stopped with nobody left to start it.

const isMirrorOf = (component: string) => (p: Pod) => p.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined && p.metadata.labels?.component === component;

/** Why the run may not take this node down, or undefined: pure, over the node, the run's API endpoint and the static pods. */
export function controlPlaneRefusal({ node, server, staticPods }: { node: Node; server: string; staticPods: Pod[] }): string | undefined {
  const name = node.metadata.name;
  const host = hostOf(server);
  const addresses = [name, ...(node.status?.addresses ?? []).map((a) => a.address)];
  if (host && addresses.includes(host)) return `the run reaches the Kubernetes API at ${server}, which is ${name} itself: stopping its kubelet and its static pods cuts the run off from its own Lease`;
  const apiservers = staticPods.filter(isMirrorOf('kube-apiserver'));
  const here = apiservers.filter((p) => p.spec.nodeName === name);
  // Only a Ready apiserver elsewhere serves the run once this one is down (the etcd rule below counts alike).
  const elsewhere = apiservers.filter((p) => p.spec.nodeName !== name && isPodReady(p));
  if (here.length > 0 && elsewhere.length === 0) {
    const others = apiservers.length - here.length;
    return `${name} holds the cluster's only ${others > 0 ? `Ready kube-apiserver (${others} other(s), none Ready)` : 'kube-apiserver'} (${here.map((p) => p.metadata.name).join(', ')}): the run would lose the API it works through`;
  }
  const members = staticPods.filter(isMirrorOf('etcd'));
  if (members.some((p) => p.spec.nodeName === name)) {
    const quorum = Math.floor(members.length / 2) + 1;
    const others = members.filter((p) => p.spec.nodeName !== name && isPodReady(p));
    if (others.length < quorum) {
      return `${name} runs an etcd member that quorum needs (${members.length} member(s), quorum ${quorum}, ${others.length} other(s) Ready): etcd would stop serving while it is down`;
    }
  }
  return undefined;
}

/** The hostname of a URL, without IPv6 brackets; '' when it is not one. */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return '';
  }
}

/** The control plane's static pods, cluster-wide (kube-system, by component): a handful, whatever the cluster's size. */
export function listControlPlanePods(cluster: Cluster): Promise<Pod[]> {
  return listAll<Pod>(cluster, `/api/v1/namespaces/kube-system/pods?labelSelector=${encodeURIComponent('component in (kube-apiserver,etcd)')}`);
}
