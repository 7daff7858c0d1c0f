# A real kind cluster, built offline: kind and kubeadm from Go modules, a bookworm node image assembled here (kind's
# published images cannot be pulled), one control plane and two workers on the bed's own dockerd. Each node runs real
# systemd, a real kubelet and Debian's containerd from the local apt repository, held, so the runbook upgrades and
# rolls it back through apt. Pod networking is what kindnetd sets up (ptp + host-local in /run/cni-ipam-state).
KIND_CLUSTER=nm-kind
KIND_KUBECONFIG="$TB_STATE/kind.kubeconfig"
KIND_POD_SUBNET=10.244.0.0/16
# kubeadm 1.32.5's own image names; etcd is the bed's v3.5.21, so the cluster config names its tag.
KIND_ETCD_TAG="${ETCD_VERSION#v}-0"
KIND_PAUSE_IMAGE=registry.k8s.io/pause:3.10

kind() { DOCKER_HOST="unix://$BED_DOCKER_SOCK" "$KIND_BIN/kind" "$@"; }
kind_kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$KIND_KUBECONFIG" "$@"; }
kind_workers() { kind get nodes --name "$KIND_CLUSTER" 2>/dev/null | grep worker | sort; }

kind_image_tag() {
  local key; key=$(printf '%s\n' "$(basename "$(node_rootfs_tarball)")" "$K8S_VERSION" "$KIND_VERSION" "$ETCD_VERSION" \
    "$(declare -f build_kind_rootfs preload_kind_images component_image)" "$(cat "$TB_ROOT/images/pause.c")" | sha256sum | cut -c1-12)
  echo "testbed/kind-node:$key"
}

# An image FROM scratch holding one static binary, its entrypoint, as the upstream component images do (tag: the name
# kubeadm uses).
component_image() { # TAG FILE
  local tag=$1 d
  d=$(mktemp -d); mkdir -p "$d/usr/local/bin"
  cp "$2" "$d/usr/local/bin/"
  tar -C "$d" -c . | $BED_DOCKER import -c 'ENV PATH=/usr/local/bin' -c "ENTRYPOINT [\"/usr/local/bin/${2##*/}\"]" - "$tag" >/dev/null
  rm -rf "$d"
}

# kubeadm's control-plane images and the pause image go into the node's containerd store (namespace k8s.io) at build
# time, through a containerd run inside the rootfs, so kubeadm and kubelet pull nothing.
preload_kind_images() { # ROOTFS
  local r=$1 tags=() t
  component_image "registry.k8s.io/kube-apiserver:$K8S_VERSION" "$K8S_BIN/kube-apiserver"
  component_image "registry.k8s.io/kube-controller-manager:$K8S_VERSION" "$K8S_BIN/kube-controller-manager"
  component_image "registry.k8s.io/kube-scheduler:$K8S_VERSION" "$K8S_BIN/kube-scheduler"
  component_image "registry.k8s.io/etcd:$KIND_ETCD_TAG" "$ETCD_BIN/etcd"
  gcc -static -O2 -o "$r/tmp/pause" "$TB_ROOT/images/pause.c"
  component_image "$KIND_PAUSE_IMAGE" "$r/tmp/pause"
  tags=("registry.k8s.io/kube-apiserver:$K8S_VERSION" "registry.k8s.io/kube-controller-manager:$K8S_VERSION"
    "registry.k8s.io/kube-scheduler:$K8S_VERSION" "registry.k8s.io/etcd:$KIND_ETCD_TAG" "$KIND_PAUSE_IMAGE")
  $BED_DOCKER save "${tags[@]}" > "$r/tmp/images.tar"
  for m in proc sys dev; do mount --rbind "/$m" "$r/$m"; done
  mkdir -p "$r/run/preload"
  printf 'version = 2\n[grpc]\n  address = "/run/preload/containerd.sock"\n' > "$r/tmp/preload.toml"
  chroot "$r" /usr/bin/containerd --config /tmp/preload.toml >"$TB_LOGS/kind-preload.log" 2>&1 &
  local pid=$!
  wait_for "the image-preload containerd" 30 test -S "$r/run/preload/containerd.sock"
  chroot "$r" ctr -a /run/preload/containerd.sock -n k8s.io images import --all-platforms /tmp/images.tar >>"$TB_LOGS/kind-preload.log" 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  for m in proc sys dev; do umount -R "$r/$m"; done
  for t in "${tags[@]}"; do $BED_DOCKER rmi "$t" >/dev/null; done
  rm -rf "$r/run/preload" "$r/tmp"/*
}

# kind's base image, assembled by hand: kind's own files from its module, Debian's systemd and containerd.
build_kind_rootfs() { # ROOTFS
  local r=$1 f
  tar -C "$r" -xf "$(node_rootfs_tarball)"
  # containerd is held (node_rootfs_tarball), as production nodes hold their runtime; under real systemd, maintainer
  # scripts may restart it.
  rm -f "$r/usr/sbin/policy-rc.d"
  # kind's files, as its Dockerfile copies them; containerd runs from Debian's unit, not kind's /usr/local/bin one.
  install -m 0755 "$KIND_FILES"/usr/local/bin/* "$r/usr/local/bin/"
  mkdir -p "$r/kind/bin" "$r/etc/systemd/system/kubelet.service.d" "$r/etc/containerd" "$r/etc/kubernetes/manifests"
  install -m 0755 "$KIND_FILES"/kind/bin/* "$r/kind/bin/"
  for f in etc/crictl.yaml etc/default/kubelet etc/sysctl.d/10-network-security.conf etc/sysctl.d/10-network-magic.conf \
    etc/systemd/system/kubelet.service etc/systemd/system/kubelet.slice etc/systemd/system/undo-mount-hacks.service \
    etc/systemd/system/kubelet.service.d/10-kubeadm.conf etc/systemd/system/kubelet.service.d/11-kind.conf; do
    install -m 0644 "$KIND_FILES/$f" "$r/$f"
  done
  # kind's containerd config, less the rootless fuse-overlayfs proxy; restrict_oom_score_adj because no process here
  # may lower its oom_score_adj (CAP_SYS_RESOURCE is missing on this machine).
  sed -e '/^\[proxy_plugins/,/^$/d' -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' \
    "$KIND_FILES/etc/containerd/config.toml" > "$r/etc/containerd/config.toml"
  mkdir -p "$r/etc/systemd/system/containerd.service.d"
  printf '[Service]\n# CAP_SYS_RESOURCE is missing on this machine: systemd cannot lower the score.\nOOMScoreAdjust=0\n' \
    > "$r/etc/systemd/system/containerd.service.d/10-testbed.conf"
  chroot "$r" ctr oci spec | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
    | jq 'del(.process.rlimits)' > "$r/etc/containerd/cri-base.json"
  install -m 0755 "$K8S_BIN/kubelet" "$K8S_BIN/kubectl" "$KUBEADM_BIN/kubeadm" "$r/usr/bin/"
  install -m 0755 "$CRICTL_BIN/crictl" "$r/usr/local/bin/"
  mkdir -p "$r/opt/cni/bin"; for f in "$r"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/${f##*/}" "$r/opt/cni/bin/"; done
  echo "$K8S_VERSION" > "$r/kind/version"
  # As kind's Dockerfile: no services but its own, no udev, systemd as init.
  find "$r/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$r"/lib/systemd/system/multi-user.target.wants/* "$r"/etc/systemd/system/*.wants/* \
    "$r"/lib/systemd/system/local-fs.target.wants/* "$r"/lib/systemd/system/sockets.target.wants/*udev* \
    "$r"/lib/systemd/system/sockets.target.wants/*initctl* "$r"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >> "$r/etc/systemd/journald.conf"
  ln -sf /usr/lib/systemd/systemd "$r/sbin/init"
  chroot "$r" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
  chroot "$r" systemctl mask systemd-binfmt.service >/dev/null 2>&1
  preload_kind_images "$r"
  rm -rf "$r/var/cache/apt/archives"/*.deb "$r/var/lib/apt/lists"/*_Packages
}

build_kind_node_image() {
  local tag; tag=$(kind_image_tag)
  KIND_IMAGE=$tag
  $BED_DOCKER image inspect "$tag" >/dev/null 2>&1 && return 0
  local tarball="$TESTBED_CACHE/kind-node-rootfs-${tag##*:}.tar"
  if [ ! -f "$tarball" ]; then
    log "assembling the kind node image (cold: a few minutes)"
    local r d
    # A build killed halfway leaves its rootfs, maybe with /proc, /sys and /dev still bound into it.
    for d in "$TESTBED_CACHE"/kind-rootfs.*; do
      [ -d "$d" ] || continue
      awk -v d="$d/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
      rm -rf --one-file-system "$d"
    done
    r=$(mktemp -d "$TESTBED_CACHE/kind-rootfs.XXXX")
    build_kind_rootfs "$r"
    rm -f "$TESTBED_CACHE"/kind-node-rootfs-*.tar
    tar -C "$r" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$r"
  fi
  $BED_DOCKER import "$tarball" "$tag-rootfs" >/dev/null
  # import takes no STOPSIGNAL: a one-line build adds kind's image settings (a local base, nothing pulled).
  printf 'FROM %s\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]\n' "$tag-rootfs" \
    | DOCKER_BUILDKIT=0 $BED_DOCKER build -q -t "$tag" - >"$TB_LOGS/kind-image.log" 2>&1
  $BED_DOCKER rmi "$tag-rootfs" >/dev/null
}

kind_cluster_config() {
  cat <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  # kindnetd cannot be built here: kind_pod_network sets up what it would.
  disableDefaultCNI: true
  # kube-proxy and CoreDNS images are not built (no test needs Services or DNS): their addons are skipped.
  kubeProxyMode: none
  apiServerAddress: 127.0.0.1
  podSubnet: $KIND_POD_SUBNET
kubeadmConfigPatches:
- |
  kind: InitConfiguration
  skipPhases: [preflight, addon/kube-proxy, addon/coredns]
- |
  kind: ClusterConfiguration
  etcd: {local: {imageTag: "$KIND_ETCD_TAG"}}
nodes:
- role: control-plane
YAML
  for _ in 1 2; do
    printf -- '- role: worker\n  extraMounts: [{hostPath: %s, containerPath: /srv/debs, readOnly: true}]\n' "$LOCAL_APT_REPO"
  done
}

# What kindnetd does on each node: the ptp + host-local conflist with the node's PodCIDR (reservations in
# /run/cni-ipam-state), and a route to every other node's PodCIDR through that node's address.
kind_pod_network() {
  local nodes n cidr other ocidr oip
  # name, PodCIDR and address of every node, in one list.
  nodes=$(kind_kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
  while read -r n cidr _; do
    $BED_DOCKER exec -i "$n" sh -c 'cat > /etc/cni/net.d/10-kindnet.conflist' <<JSON
{"cniVersion": "0.3.1", "name": "kindnet", "plugins": [
  {"type": "ptp", "ipMasq": false, "mtu": 1500,
   "ipam": {"type": "host-local", "dataDir": "/run/cni-ipam-state", "routes": [{"dst": "0.0.0.0/0"}], "ranges": [[{"subnet": "$cidr"}]]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
    while read -r other ocidr oip; do
      [ "$other" = "$n" ] || $BED_DOCKER exec "$n" ip route replace "$ocidr" via "$oip" </dev/null
    done <<<"$nodes"
  done <<<"$nodes"
}

# Creates the cluster, or keeps one that runs from the same node image with every node up.
start_kind_cluster() {
  build_kind_node_image
  local c="$KIND_CLUSTER-control-plane"
  if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    resume_kind_cluster
    local stale=""
    [ "$($BED_DOCKER inspect -f '{{.Config.Image}}' "$c" 2>/dev/null)" = "$KIND_IMAGE" ] || stale=1
    for n in $(kind get nodes --name "$KIND_CLUSTER"); do
      [ "$($BED_DOCKER inspect -f '{{.State.Running}}' "$n")" = true ] || stale=1
    done
    [ -z "$stale" ] || { log "recreating the kind cluster (image changed or a node stopped)"; kind delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1; }
  fi
  if ! kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
    mkdir -p /lib/modules
    kind_cluster_config > "$TB_STATE/kind-cluster.yaml"
    kind create cluster --name "$KIND_CLUSTER" --image "$KIND_IMAGE" --config "$TB_STATE/kind-cluster.yaml" \
      --kubeconfig "$KIND_KUBECONFIG" >"$TB_LOGS/kind-create.log" 2>&1 \
      || { log "kind create cluster failed, see $TB_LOGS/kind-create.log"; return 1; }
  fi
  kind get kubeconfig --name "$KIND_CLUSTER" > "$KIND_KUBECONFIG"
  # A kept cluster whose nodes restarted (the machine rebooted) answers Forbidden to kubeadm's admin until the
  # apiserver's RBAC caches are synced: wait until the admin may list nodes.
  wait_for "the kind API server to authorize its admin" 120 kind_kubectl get nodes
  kind_pod_network
  # Package lists from the local file repository mounted on the workers (no network), as on the pool's nodes; and
  # their units up (a test run killed mid-upgrade leaves kubelet stopped: the test puts the rest back).
  for n in $(kind_workers); do
    $BED_DOCKER exec "$n" apt-get update -qq >/dev/null 2>&1
    $BED_DOCKER exec "$n" systemctl start containerd kubelet
  done
  wait_for "the kind nodes Ready" 180 kind_all_ready
}

# Every node Ready (a worker a killed test left cordoned counts: the kind test uncordons it).
kind_all_ready() {
  ! kind_kubectl get nodes --no-headers | awk '{print $2}' | grep -v '^Ready\(,SchedulingDisabled\)\?$' | grep -q . &&
    [ "$(kind_kubectl get nodes --no-headers | wc -l)" = 3 ]
}

stop_kind_cluster() { [ -x "$KIND_BIN/kind" ] && kind delete cluster --name "$KIND_CLUSTER" >/dev/null 2>&1; true; }

seed_kind_workloads() {
  kind_kubectl apply -f "$TB_ROOT/manifests/kind-workloads.yaml" >/dev/null
  wait_for "the kind workloads ready" 180 kind_kubectl -n demo rollout status deploy/web --timeout=5s
}

# The test suite freezes the kind cluster while no test uses it (only the kind file does): its three nodes cost a
# fifth of a core doing nothing. A frozen container keeps its state; its clocks jump when it thaws. On a busy machine
# runc may fail to freeze a node whose tasks keep changing: tried again; a node left running only costs CPU, so that
# is said, not failed.
pause_kind_cluster() {
  local n try
  for n in $(kind get nodes --name "$KIND_CLUSTER" 2>/dev/null); do
    for try in 1 2 3; do
      [ "$($BED_DOCKER inspect -f '{{.State.Paused}}' "$n")" = true ] && break
      $BED_DOCKER pause "$n" >/dev/null 2>&1 || { [ "$try" = 3 ] && log "could not freeze $n: it runs on"; sleep 2; }
    done
  done
  return 0
}

# Thawed, then waited for until it is as before: a Lease renewed since by every kubelet and by the controller manager
# and scheduler (which lose leadership over a long pause and are restarted), every node Ready and untainted. Twice,
# a node-monitor period apart: the node controller may still mark a node Unknown for its stale Lease.
resume_kind_cluster() {
  local n thawed="" since
  since=$(date -u +%Y-%m-%dT%H:%M:%S)
  for n in $(kind get nodes --name "$KIND_CLUSTER" 2>/dev/null); do
    [ "$($BED_DOCKER inspect -f '{{.State.Paused}}' "$n")" = true ] || continue
    $BED_DOCKER unpause "$n" >/dev/null; thawed=1
  done
  [ -n "$thawed" ] || return 0
  wait_for "the kind cluster to settle after its pause" 180 kind_settled_since "$since"
  sleep 6
  wait_for "the kind cluster to settle after its pause" 180 kind_settled_since "$since"
}

kind_settled_since() { # SINCE (UTC, seconds): Leases renewed after it, every node Ready, no node taint of the controller
  local stale
  stale=$( { kind_kubectl -n kube-node-lease get leases -o jsonpath='{range .items[*]}{.spec.renewTime}{"\n"}{end}'
             kind_kubectl -n kube-system get lease kube-controller-manager kube-scheduler -o jsonpath='{range .items[*]}{.spec.renewTime}{"\n"}{end}'
           } | awk -v s="$1" '$0 < s' | wc -l) || return 1
  [ "$stale" = 0 ] && kind_all_ready &&
    ! kind_kubectl get nodes -o jsonpath='{range .items[*]}{.spec.taints[*].key}{"\n"}{end}' | grep -q 'node.kubernetes.io/\(unreachable\|not-ready\)'
}
