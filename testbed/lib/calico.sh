# Calico on the bed, as a kubespray cluster has it, for the pool's Calico nodes (testbed/lib/pool.sh): Calico's CRDs
# from its module, one IPPool (kubespray's 10.233.64.0/18, blocks of /26, no encapsulation), the IPAM config with
# strictAffinity false (kubespray's and Calico's default, so a node whose blocks are full borrows from another's),
# the ClusterInformation calico-node would write, and the CNI plugin's ServiceAccount and ClusterRole from Calico's own
# manifest. Each Calico node runs the real plugin (calico, calico-ipam); there is no calico-node (felix and bird are
# not buildable from Go modules): no BGP, no policy, and no `blackhole <block> proto bird` route unless a test adds
# one as bird would. node-setup writes at boot what calico-node's install-cni would: the CNI config, the plugin's
# kubeconfig and /var/lib/calico/nodename.
CALICO_POOL_CIDR=10.233.64.0/18
CALICO_POOL_BLOCK_SIZE=26
CALICO_KUBECONFIG="$TB_STATE/calico/kubeconfig"

# The documents of Calico's manifest that make the CNI plugin's identity (ServiceAccount, ClusterRole, binding).
calico_cni_rbac() {
  awk 'BEGIN { RS = "\n---\n" } /\n  name: calico-cni-plugin\n/ { print $0; print "---" }' \
    "$CALICO_MODULE/manifests/calico.yaml"
}

seed_calico() {
  kubectl apply -f "$CALICO_MODULE/libcalico-go/config/crd/" >/dev/null
  wait_for "Calico's CRDs established" 60 kubectl wait --for condition=established --timeout=5s \
    crd/ippools.crd.projectcalico.org crd/ipamconfigs.crd.projectcalico.org crd/clusterinformations.crd.projectcalico.org
  calico_cni_rbac | kubectl apply -f - >/dev/null
  # Last, the plugin's token: long-lived (calico-node's install-cni refreshes a short one; there is none here).
  kubectl apply -f - >/dev/null <<YAML
apiVersion: crd.projectcalico.org/v1
kind: ClusterInformation
metadata: {name: default}
spec: {clusterGUID: node-maint-testbed, clusterType: "k8s,bgp,kdd", calicoVersion: "v3.28", datastoreReady: true}
---
apiVersion: crd.projectcalico.org/v1
kind: IPAMConfig
metadata: {name: default}
spec: {strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 0}
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: default-pool}
spec: {cidr: $CALICO_POOL_CIDR, blockSize: $CALICO_POOL_BLOCK_SIZE, ipipMode: Never, vxlanMode: Never, natOutgoing: true, nodeSelector: all(), allowedUses: [Workload, Tunnel]}
---
apiVersion: v1
kind: Secret
metadata: {name: calico-cni-plugin-token, namespace: kube-system, annotations: {kubernetes.io/service-account.name: calico-cni-plugin}}
type: kubernetes.io/service-account-token
YAML
  wait_for "the Calico CNI plugin's token" 30 calico_token
  mkdir -p "$(dirname "$CALICO_KUBECONFIG")"
  # As install-cni writes it: the apiserver as the node reaches it (its own 127.0.0.1:6443), the bed's CA.
  cat > "$CALICO_KUBECONFIG.tmp" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: /etc/testbed/ca.crt}
users:
- name: calico-cni-plugin
  user: {token: "$(calico_token)"}
contexts:
- name: calico-context
  context: {cluster: local, user: calico-cni-plugin}
current-context: calico-context
YAML
  # Unchanged when it is the same (the pool's nodes are replaced when what they mount changes).
  cmp -s "$CALICO_KUBECONFIG.tmp" "$CALICO_KUBECONFIG" && rm "$CALICO_KUBECONFIG.tmp" || mv "$CALICO_KUBECONFIG.tmp" "$CALICO_KUBECONFIG"
}

calico_token() { kubectl -n kube-system get secret calico-cni-plugin-token -o jsonpath='{.data.token}' | base64 -d; }
