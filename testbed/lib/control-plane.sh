# The control plane on loopback: etcd, kube-apiserver (TLS, RBAC + Node authorization), controller-manager,
# scheduler, and the controller-manager's node IPAM controller (a /25 PodCIDR per node) as a process of its own, so a
# test can hold back PodCIDRs (testbed/ctl stop node-ipam) while every other controller goes on for the other tests.
start_control_plane() {
  mkdir -p "$TB_STATE/etcd"
  start_bg etcd "$ETCD_BIN/etcd" --name testbed --data-dir "$TB_STATE/etcd" \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster testbed=http://127.0.0.1:23800 --listen-metrics-urls http://127.0.0.1:23810
  wait_for etcd 60 curl -sf "$ETCD_URL/health"

  start_bg kube-apiserver "$K8S_BIN/kube-apiserver" --etcd-servers="$ETCD_URL" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$APISERVER_PORT \
    --endpoint-reconciler-type=none --service-cluster-ip-range=$SERVICE_CIDR \
    --tls-cert-file="$TB_PKI/apiserver.crt" --tls-private-key-file="$TB_PKI/apiserver.key" \
    --client-ca-file="$TB_PKI/ca.crt" --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --service-account-key-file="$TB_PKI/sa.pub" --service-account-signing-key-file="$TB_PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --kubelet-client-certificate="$TB_PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$TB_PKI/apiserver-kubelet-client.key" --kubelet-preferred-address-types=InternalIP \
    --allow-privileged=true --profiling=false
  wait_for kube-apiserver 120 kubectl get --raw /readyz

  write_kubeconfig "$TB_STATE/controller-manager.kubeconfig" controller-manager
  start_bg kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig="$TB_STATE/controller-manager.kubeconfig" --bind-address=127.0.0.1 --leader-elect=false \
    --service-cluster-ip-range=$SERVICE_CIDR --root-ca-file="$TB_PKI/ca.crt" \
    --service-account-private-key-file="$TB_PKI/sa.key" --use-service-account-credentials=true \
    --cluster-signing-cert-file="$TB_PKI/ca.crt" --cluster-signing-key-file="$TB_PKI/ca.key" \
    --controllers='*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller'
  start_bg node-ipam "$K8S_BIN/kube-controller-manager" \
    --kubeconfig="$TB_STATE/controller-manager.kubeconfig" --bind-address=127.0.0.1 --secure-port=10357 \
    --leader-elect=false --use-service-account-credentials=true --controllers=nodeipam \
    --allocate-node-cidrs=true --cluster-cidr=$CLUSTER_CIDR --node-cidr-mask-size=$NODE_CIDR_MASK \
    --service-cluster-ip-range=$SERVICE_CIDR
  write_kubeconfig "$TB_STATE/scheduler.kubeconfig" scheduler
  start_bg kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$TB_STATE/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false
  wait_for "the default service account" 90 kubectl -n default get serviceaccount default
}

stop_control_plane() {
  for c in kube-scheduler node-ipam kube-controller-manager kube-apiserver etcd; do stop_bg "$c"; done
}
