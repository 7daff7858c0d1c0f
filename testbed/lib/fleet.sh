# Fleet hosts: Debian containers on the bed's own dockerd (its own data root, exec root and socket, so the real node's
# runtime can be stopped, upgraded and rolled back under them), each a kwok-managed Node with a PodCIDR, reachable by
# SSH on a 127.0.0.1 port and by docker exec. Plus API-only kwok nodes for scale work.
FLEET_PACKAGES=openssh-server,sudo,iproute2,containernetworking-plugins,jq,socat,procps,curl,ca-certificates,apt-utils
FLEET_PREFIX=tb-

# The bed's own containerd and dockerd, from copies of the binaries: the real node's containerd package is what the
# runbook stops, upgrades and downgrades, and dockerd would otherwise attach to the system containerd's socket.
start_bed_dockerd() {
  local bin="$TB_STATE/bed-bin"
  mkdir -p "$TB_RUN/bed-containerd" "$BED_DOCKER_ROOT" "$bin"
  for b in /usr/bin/containerd /usr/bin/containerd-shim-runc-v2 /usr/sbin/runc /usr/sbin/dockerd /usr/bin/docker-init /usr/sbin/docker-proxy; do
    [ -x "$b" ] && [ ! -x "$bin/$(basename "$b")" ] && cp "$b" "$bin/"
  done
  install -m 0755 "$TB_ROOT/node/runc-wrapper" "$bin/runc-wrapper"
  cat > "$TB_STATE/bed-containerd.toml" <<TOML
version = 2
root = "$TB_STATE/bed-containerd"
state = "$TB_RUN/bed-containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$TB_RUN/bed-containerd/containerd.sock"
[ttrpc]
  address = "$TB_RUN/bed-containerd/containerd.sock.ttrpc"
TOML
  start_bg bed-containerd env PATH="$bin:$PATH" "$bin/containerd" --config "$TB_STATE/bed-containerd.toml"
  wait_for "the bed's containerd" 30 test -S "$TB_RUN/bed-containerd/containerd.sock"
  start_bg bed-dockerd env PATH="$bin:$PATH" "$bin/dockerd" --host "unix://$BED_DOCKER_SOCK" --data-root "$BED_DOCKER_ROOT" \
    --exec-root "$TB_RUN/docker-exec" --pidfile "$TB_RUN/bed-dockerd.pid" --bridge=none --iptables=false \
    --ip-masq=false --ip-forward=false --containerd "$TB_RUN/bed-containerd/containerd.sock" \
    --add-runtime "bed-runc=$bin/runc-wrapper" --default-runtime bed-runc
  wait_for "the bed's dockerd" 60 $BED_DOCKER info
}

fleet_image_tag() {
  local key; key=$(printf '%s\n' "$FLEET_PACKAGES" "$CONTAINERD_OLD" "$(cat "$TB_ROOT/images/pause.c")" | sha256sum | cut -c1-12)
  echo "testbed/fleet-host:$key"
}

# The fleet hosts' image: the shared bookworm rootfs with containerd, plus sshd and the maint user.
build_fleet_image() {
  local tag; tag=$(fleet_image_tag)
  $BED_DOCKER image inspect "$tag" >/dev/null 2>&1 && { FLEET_IMAGE=$tag; return 0; }
  local tarball="$TESTBED_CACHE/fleet-rootfs-${tag##*:}.tar"
  if [ ! -f "$tarball" ]; then
    log "building the fleet host rootfs with debootstrap (cold: a few minutes)"
    local r; r=$(mktemp -d "$TESTBED_CACHE/rootfs.XXXX")
    debootstrap_with_containerd "$r" "$FLEET_PACKAGES" "$TB_LOGS/debootstrap.log"
    chroot "$r" useradd -m -s /bin/bash maint
    chroot "$r" usermod -p '*' maint
    echo 'maint ALL=(ALL) NOPASSWD:ALL' > "$r/etc/sudoers.d/maint"; chmod 440 "$r/etc/sudoers.d/maint"
    rm -f "$r"/etc/ssh/ssh_host_*
    gcc -static -O2 -o "$r/usr/local/sbin/pause" "$TB_ROOT/images/pause.c"
    rm -rf "$r/var/cache/apt/archives"/*.deb "$r/var/lib/apt/lists"/*_Packages
    tar -C "$r" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$r"
  fi
  $BED_DOCKER import -c 'ENTRYPOINT ["/opt/testbed/fleet/init"]' "$tarball" "$tag" >/dev/null
  FLEET_IMAGE=$tag
}

# The host's daemons, for the systemctl stand-in; mounted, so that changing them needs no image rebuild.
write_fleet_units() { # DIR
  mkdir -p "$1"
  write_unit "$1" ssh "/usr/sbin/sshd -D -e" "echo > /dev/tcp/127.0.0.1/22"
  write_unit "$1" containerd "/usr/bin/containerd" "ctr version"
  write_unit "$1" kubelet "/opt/testbed/fleet/kubelet-standin" ""
  write_unit "$1" apiserver-proxy "/usr/bin/socat TCP-LISTEN:6443,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/testbed-api/apiserver.sock" "echo > /dev/tcp/127.0.0.1/6443"
}

fleet_name() { echo "fleet-$1"; }

start_fleet_host() { # INDEX
  local i=$1 node; node=$(fleet_name "$i")
  local c="$FLEET_PREFIX$node" etc="$TB_STATE/fleet/$node" port=$((FLEET_SSH_BASE_PORT + i))
  mkdir -p "$etc"
  echo "$node" > "$etc/node-name"
  write_kubeconfig "$etc/kubeconfig" cni-agent "https://127.0.0.1:6443"
  install -m 0644 "$SSH_KEY.pub" "$etc/authorized_keys"
  write_fleet_units "$etc/units"
  echo "runtime-endpoint: unix:///run/containerd/containerd.sock" > "$etc/crictl.yaml"
  # A container made from other binaries, mounts or scripts than this up would use is replaced, not reused (a mounted
  # file that git replaces keeps its old inode inside the container; a checkout deleted and cloned again at the same
  # path leaves the container's mount on the deleted directory: hence the inodes).
  local cfg; cfg=$(printf '%s\n' "$FLEET_IMAGE" "$TB_ROOT" "$K8S_BIN" "$CRICTL_BIN" "$LOCAL_APT_REPO" "$(declare -f start_fleet_host)" \
    "$(cat "$TB_ROOT"/fleet/* "$TB_ROOT/node/systemctl")" \
    "$(stat -c '%d:%i' "$TB_ROOT" "$TB_ROOT/node/systemctl" "$K8S_BIN/kubectl" "$CRICTL_BIN/crictl" "$LOCAL_APT_REPO" "$etc")" | sha256sum | cut -c1-12)
  if [ "$($BED_DOCKER inspect -f '{{index .Config.Labels "node-maint-testbed/config"}}' "$c" 2>/dev/null)" != "$cfg" ]; then
    $BED_DOCKER rm -f "$c" >/dev/null 2>&1 || true
  fi
  if ! $BED_DOCKER inspect "$c" >/dev/null 2>&1; then
    # All capabilities but CAP_SYS_RESOURCE, which this machine's own bounding set lacks (so --privileged fails).
    # /run is a tmpfs, as on a real host: netns pins and PID files do not outlive a restart of the host.
    $BED_DOCKER run -d -q --name "$c" --hostname "$node" --cap-add ALL --cap-drop SYS_RESOURCE \
      --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
      --network none --tmpfs /run \
      --label node-maint-testbed=fleet --label "node-maint-testbed/config=$cfg" \
      -v "$TB_ROOT:/opt/testbed:ro" -v "$TB_ROOT/node/systemctl:/usr/local/bin/systemctl:ro" \
      -v "$etc/units:$STANDIN_UNITS:ro" -v "$K8S_BIN/kubectl:/usr/local/bin/kubectl:ro" \
      -v "$CRICTL_BIN/crictl:/usr/local/bin/crictl:ro" -v "$etc/crictl.yaml:/etc/crictl.yaml:ro" -v "$etc:/etc/testbed:ro" \
      -v "$LOCAL_APT_REPO:/srv/debs:ro" -v "$TB_RUN/api:/run/testbed-api" \
      "$FLEET_IMAGE" >/dev/null
  elif [ "$($BED_DOCKER inspect -f '{{.State.Running}}' "$c")" != true ]; then
    $BED_DOCKER start "$c" >/dev/null
  fi
  wait_for "sshd in $c" 60 $BED_DOCKER exec "$c" test -s /etc/ssh/ssh_host_ed25519_key.pub
  $BED_DOCKER exec "$c" cat /etc/ssh/ssh_host_ed25519_key.pub > "$etc/host_key.pub"
  add_known_host "$port" "$etc/host_key.pub"
  BED_DOCKER_SOCK=$BED_DOCKER_SOCK start_bg "ssh-relay-$node" socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:$TB_ROOT/fleet/ssh-relay $c"
  register_kwok_node "$node" fleet
}

register_kwok_node() { # NAME KIND(fleet|api-only)
  local taints=""
  [ "$2" = api-only ] && taints='  taints: [{key: node-maint.io/api-only, value: "true", effect: NoSchedule}]'
  kubectl get node "$1" >/dev/null 2>&1 && return 0
  kubectl apply -f - >/dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $1
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: $1, kubernetes.io/os: linux, kubernetes.io/arch: amd64, node-maint.io/testbed: $2, type: kwok}
spec:
$taints
NODE
}

start_api_socket() {
  mkdir -p "$TB_RUN/api"
  start_bg api-socket socat "UNIX-LISTEN:$TB_RUN/api/apiserver.sock,fork,mode=666,unlink-early" "TCP:127.0.0.1:$APISERVER_PORT"
  wait_for "the apiserver socket" 20 test -S "$TB_RUN/api/apiserver.sock"
}

start_kwok() {
  write_kubeconfig "$TB_STATE/kwok.kubeconfig" kwok
  # kwok reads its stages once: a kwok started with other stages is restarted.
  local stages; stages=$(sha256sum < "$TB_ROOT/fleet/kwok-stages.yaml" | cut -c1-12)
  [ "$(cat "$TB_STATE/kwok.stages" 2>/dev/null)" = "$stages" ] || stop_bg kwok
  echo "$stages" > "$TB_STATE/kwok.stages"
  start_bg kwok "$KWOK_BIN/kwok" --kubeconfig "$TB_STATE/kwok.kubeconfig" --config "$TB_ROOT/fleet/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.2 --server-address=127.0.0.1:10247 --node-lease-duration-seconds=40
}

start_fleet() { # COUNT
  start_bed_dockerd
  build_fleet_image
  start_api_socket
  start_kwok
  kubectl apply -f "$TB_ROOT/manifests/cni-agent-rbac.yaml" >/dev/null
  for i in $(seq 1 "$1"); do start_fleet_host "$i"; done
  for i in $(seq 1 "$1"); do wait_for "$(fleet_name "$i") Ready with a PodCIDR" 120 node_ready_with_cidr "$(fleet_name "$i")"; done
}

register_api_only_nodes() { # COUNT
  [ "$1" -gt 0 ] || return 0
  log "registering $1 API-only kwok nodes"
  local f; f=$(mktemp)
  for i in $(seq 1 "$1"); do
    printf 'apiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-%04d\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {node-maint.io/testbed: api-only, type: kwok}\nspec:\n  taints: [{key: node-maint.io/api-only, value: "true", effect: NoSchedule}]\n---\n' "$i"
  done > "$f"
  kubectl apply -f "$f" >/dev/null; rm -f "$f"
}

stop_fleet() {
  if [ -S "$BED_DOCKER_SOCK" ] && $BED_DOCKER info >/dev/null 2>&1; then
    local ids; ids=$($BED_DOCKER ps -aq --filter label=node-maint-testbed=fleet)
    [ -n "$ids" ] && $BED_DOCKER rm -f $ids >/dev/null
  fi
  for f in "$TB_RUN"/pids/ssh-relay-*.pid; do [ -f "$f" ] && stop_bg "$(basename "$f" .pid)"; done
  stop_bg kwok; stop_bg api-socket; stop_bg bed-dockerd; stop_bg bed-containerd
}
