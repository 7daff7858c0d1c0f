# The pool of real nodes: containers on the bed's own dockerd, each a node as kind makes them (real systemd, kind's
# entrypoint, a real kubelet 1.32) joined to the bed's control plane, with sshd, the local apt repository and its
# runtime packages held. Two flavours (runtimes), each also as a Calico node:
#   docker-node-N:     dockerd + cri-dockerd with kubenet (the field reports' nodes), containerd under dockerd
#   containerd-node-N: Debian's containerd as kubelet's CRI runtime, bridge + host-local from its CNI template
#   docker-calico-node-N, containerd-calico-node-N: the same runtimes with Calico's CNI plugin and calico-ipam
#     (testbed/lib/calico.sh; cri-dockerd with --network-plugin=cni)
# Each has no network but its own (node IP on a port-less bridge), reaches the apiserver through a unix socket the bed
# forwards, and is reached by SSH through a relay on 127.0.0.1 that enters its network namespace. Tests lease nodes
# from the pool (test/integration/pool.ts), so files run side by side, each on nodes of its own.
POOL_PREFIX=tb-
# A pool node's kind: its flavour (runtime), and -calico for a Calico node.
POOL_KINDS="docker containerd docker-calico containerd-calico"

raise_inotify_limits() {
  [ "$(sysctl -n fs.inotify.max_user_instances)" -ge 8192 ] || sysctl -qw fs.inotify.max_user_instances=8192
  [ "$(sysctl -n fs.inotify.max_user_watches)" -ge 1048576 ] || sysctl -qw fs.inotify.max_user_watches=1048576
}

pool_node_name() { echo "$1-node-$2"; }          # KIND INDEX
pool_kind_number() { case "$1" in docker) echo 1 ;; containerd) echo 2 ;; docker-calico) echo 3 ;; containerd-calico) echo 4 ;; esac; }
pool_ssh_port() { echo $((2280 + 30 * $(pool_kind_number "$1") + $2)); }   # docker 2311.., containerd 2341.., then 2371.., 2401..
pool_node_ip() { echo "10.99.$(pool_kind_number "$1").$2"; }

# The pause and busybox images every node loads into its runtime at boot (nothing can be pulled here).
pool_images_tar() {
  local key; key=$(printf '%s\n' "$(cat "$TB_ROOT/images/pause.c")" "$(sha256sum /bin/busybox)" "$(declare -f pool_images_tar)" | sha256sum | cut -c1-12)
  local tar="$TESTBED_CACHE/pool-images-$key.tar"
  if [ ! -f "$tar" ]; then
    local d; d=$(mktemp -d)
    mkdir -p "$d/pause" "$d/busybox/bin"
    gcc -static -O2 -o "$d/pause/pause" "$TB_ROOT/images/pause.c"
    tar -C "$d/pause" -c . | $BED_DOCKER import -c 'ENTRYPOINT ["/pause"]' - registry.k8s.io/pause:3.10 >/dev/null
    cp /bin/busybox "$d/busybox/bin/busybox"
    for a in sh sleep ls cat echo true false ip hostname; do ln -s busybox "$d/busybox/bin/$a"; done
    tar -C "$d/busybox" -c . | $BED_DOCKER import -c 'CMD ["/bin/sh"]' - testbed/busybox:1 >/dev/null
    $BED_DOCKER save registry.k8s.io/pause:3.10 testbed/busybox:1 > "$tar.tmp" && mv "$tar.tmp" "$tar"
    $BED_DOCKER rmi registry.k8s.io/pause:3.10 testbed/busybox:1 >/dev/null
    rm -rf "$d"
  fi
  echo "$tar"
}

pool_image_tag() { # FLAVOUR
  local key; key=$(printf '%s\n' "$(basename "$(node_rootfs_tarball)")" "$(basename "$(pool_images_tar)")" "$K8S_VERSION" \
    "$CRI_DOCKERD_VERSION" "$CRI_TOOLS_VERSION" "$KIND_VERSION" "$DOCKER_OLD" "$(declare -f build_pool_image)" \
    "$(cd "$TB_ROOT/pool" && find . -type f | sort | xargs cat)" | sha256sum | cut -c1-12)
  echo "testbed/pool-node:$key-$1"
}

# One flavour's image: a build container runs testbed/pool/setup-image on the base (the node rootfs for containerd,
# the containerd image for docker), and is committed with kind's entrypoint.
build_pool_image() { # FLAVOUR
  local flavour=$1 tag base stage c
  tag=$(pool_image_tag "$flavour")
  $BED_DOCKER image inspect "$tag" >/dev/null 2>&1 && return 0
  if [ "$flavour" = containerd ]; then
    base="testbed/node-rootfs:$(basename "$(node_rootfs_tarball)" .tar)"
    $BED_DOCKER image inspect "$base" >/dev/null 2>&1 || $BED_DOCKER import "$(node_rootfs_tarball)" "$base" >/dev/null
  else
    build_pool_image containerd
    base=$(pool_image_tag containerd)
  fi
  log "building the pool's $flavour node image"
  stage=$(mktemp -d)
  cp "$K8S_BIN/kubelet" "$CRICTL_BIN/crictl" "$CRI_DOCKERD_BIN/cri-dockerd" "$stage/"
  c="tb-build-$flavour-$$"
  $BED_DOCKER rm -f "$c" >/dev/null 2>&1 || true
  $BED_DOCKER run --name "$c" --network none -e "DOCKER_OLD=$DOCKER_OLD" \
    -v "$TB_ROOT/pool:/tmp/pool:ro" -v "$KIND_FILES:/tmp/kind:ro" -v "$stage:/tmp/bin:ro" \
    -v "$(pool_images_tar):/tmp/images.tar:ro" -v "$LOCAL_APT_REPO:/srv/debs:ro" \
    --entrypoint /tmp/pool/setup-image "$base" "$flavour" >"$TB_LOGS/pool-image-$flavour.log" 2>&1 \
    || { log "building the $flavour node image failed, see $TB_LOGS/pool-image-$flavour.log"; rm -rf "$stage"; return 1; }
  $BED_DOCKER commit -c 'ENV container=docker' -c 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' -c 'CMD []' \
    "$c" "$tag" >/dev/null
  $BED_DOCKER rm "$c" >/dev/null
  rm -rf "$stage"
}

start_pool_node() { # KIND INDEX
  local kind=$1 i=$2 node; node=$(pool_node_name "$1" "$2")
  local flavour=${kind%-calico} c="$POOL_PREFIX$node" etc="$TB_STATE/pool/$node" port; port=$(pool_ssh_port "$kind" "$i")
  local image; image=$(pool_image_tag "$flavour")
  mkdir -p "$etc"
  echo "$node" > "$etc/node-name"
  pool_node_ip "$kind" "$i" > "$etc/node-ip"
  echo "$flavour" > "$etc/flavour"
  # A Calico node: what calico-node's install-cni would give the plugin (node-setup puts it in place at boot), and the
  # plugin's binaries mounted from the bed's build.
  local calico=()
  if [ "$kind" != "$flavour" ]; then
    echo calico > "$etc/network"; install -m 0600 "$CALICO_KUBECONFIG" "$etc/calico-kubeconfig"
    calico=(-v "$CALICO_BIN:/opt/testbed-calico:ro")
  fi
  make_cert "node-$node" "/O=system:nodes/CN=system:node:$node"
  write_kubeconfig "$etc/kubeconfig" "node-$node" "https://127.0.0.1:6443"
  install -m 0644 "$TB_PKI/ca.crt" "$etc/ca.crt"
  install -m 0644 "$SSH_KEY.pub" "$etc/authorized_keys"
  # The node's host key is made here, once: it survives the node's container being replaced, as known_hosts does.
  [ -f "$etc/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C "$node" -f "$etc/ssh_host_ed25519_key"
  add_known_host "$port" "$etc/ssh_host_ed25519_key.pub"
  # A container made from another image, mounts or settings than this up would use is replaced, not reused (a
  # directory deleted and made again at the same path leaves the container's mount on the deleted one: hence inodes).
  local cfg; cfg=$(printf '%s\n' "$image" "$LOCAL_APT_REPO" "$TEXTFILE_DIR" "$(declare -f start_pool_node)" "$(cat "$etc"/*)" \
    "$(stat -c '%d:%i' "$etc" "$LOCAL_APT_REPO" "$TB_RUN/api" "$TEXTFILE_DIR")" "${calico[*]}" | sha256sum | cut -c1-12)
  if [ "$($BED_DOCKER inspect -f '{{index .Config.Labels "node-maint-testbed/config"}}' "$c" 2>/dev/null)" != "$cfg" ]; then
    remove_pool_container "$c"
    # A node replaced is a node new to the cluster: its old Node object (and its pods) go with it.
    kubectl delete node "$node" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
  if ! $BED_DOCKER inspect "$c" >/dev/null 2>&1; then
    # As kind runs its nodes (the bed's runc wrapper takes out CAP_SYS_RESOURCE, which this machine lacks), with no
    # network but the container's own. A node reboots as a machine does: `systemctl reboot` ends its systemd, the
    # container exits and docker starts it again (/run and /tmp come back empty, /var and the host key kept); a
    # container stopped by testbed/down stays stopped.
    $BED_DOCKER run -d -q -t --name "$c" --hostname "$node" --privileged --init=false --cgroupns=private --restart unless-stopped \
      --security-opt seccomp=unconfined --security-opt apparmor=unconfined --stop-signal SIGRTMIN+3 \
      --tmpfs /tmp --tmpfs /run -v /var -v /lib/modules:/lib/modules:ro --network none \
      --label node-maint-testbed=pool --label "node-maint-testbed/flavour=$flavour" --label "node-maint-testbed/config=$cfg" \
      -v "$etc:/etc/testbed:ro" -v "$LOCAL_APT_REPO:/srv/debs:ro" -v "$TB_RUN/api:/opt/testbed-api" \
      -v "$TEXTFILE_DIR:/var/lib/prometheus/node-exporter" "${calico[@]}" \
      "$image" >/dev/null
  elif [ "$($BED_DOCKER inspect -f '{{.State.Running}}' "$c")" != true ] && ! powered_off "$node"; then
    $BED_DOCKER start "$c" >/dev/null
  fi
  BED_DOCKER_SOCK=$BED_DOCKER_SOCK start_bg "ssh-relay-$node" socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:$TB_ROOT/pool/ssh-relay $c"
}

start_api_socket() {
  mkdir -p "$TB_RUN/api"
  start_bg api-socket socat "UNIX-LISTEN:$TB_RUN/api/apiserver.sock,fork,mode=666,unlink-early" "TCP:127.0.0.1:$APISERVER_PORT"
  wait_for "the apiserver socket" 20 test -S "$TB_RUN/api/apiserver.sock"
}

# A node a test powered off (a machine that does not come back from its reboot) stays off, whatever up runs meanwhile.
powered_off() { [ -e "$TB_RUN/powered-off/$1" ]; }

# How many nodes of a kind the pool has: DOCKER CONTAINERD CALICO (Calico nodes of each runtime).
pool_count() { case "$1" in docker) echo "$2" ;; containerd) echo "$3" ;; *) echo "$4" ;; esac; }

start_pool() { # DOCKER_NODES CONTAINERD_NODES CALICO_NODES_PER_RUNTIME
  start_api_socket
  build_pool_image docker
  local k i
  for k in $POOL_KINDS; do
    for i in $(seq 1 "$(pool_count "$k" "$@")"); do start_pool_node "$k" "$i"; done
  done
  local n
  for k in $POOL_KINDS; do
    for i in $(seq 1 "$(pool_count "$k" "$@")"); do
      n=$(pool_node_name "$k" "$i")
      if [ "${DEMO:-0}" = 1 ]; then
        # The demo's up waits for the node it is told to use (the suite's, leased) only: others may be in a test's reboot.
        [ -n "${NODE_MAINT_DEMO_NODE:-}" ] && [ "$n" != "$NODE_MAINT_DEMO_NODE" ] || powered_off "$n" ||
          wait_for "$n Ready with a PodCIDR" 180 node_ready_with_cidr "$n"
      else
        # A node a killed test run left with its units stopped has them started, as an operator would; one left broken
        # (its runtime held at boot, units disabled) is replaced, as the suite's reset does. Never while the suite runs:
        # its global set-up runs this up before the first test.
        powered_off "$n" || node_ready_with_cidr "$n" || { start_stopped_units "$n"; wait_for "$n Ready with a PodCIDR" 180 node_ready_with_cidr "$n"; } ||
          recreate_pool_node "$n"
      fi
    done
  done
  # Nodes of a larger pool before (testbed/up with fewer nodes now) go.
  local c
  for c in $($BED_DOCKER ps -a --filter label=node-maint-testbed=pool --format '{{.Names}}'); do
    n=${c#"$POOL_PREFIX"}; k=${n%%-node-*}; i=${n##*-}
    if [ "$i" -gt "$(pool_count "$k" "$@")" ]; then
      remove_pool_container "$c"; stop_bg "ssh-relay-$n"; kubectl delete node "$n" --ignore-not-found >/dev/null
    fi
  done
}

recreate_pool_node() { # NAME: its container replaced, as a node is re-imaged
  [[ "$1" =~ ^(docker|containerd|docker-calico|containerd-calico)-node-([0-9]+)$ ]] || { echo "testbed: no pool node $1" >&2; return 2; }
  log "replacing $1's container (a node re-imaged)"
  build_local_apt_repo   # cached: names the repository the node mounts
  remove_pool_container "$POOL_PREFIX$1"
  kubectl delete node "$1" --ignore-not-found >/dev/null
  start_pool_node "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
  wait_for "$1 Ready with a PodCIDR" 180 node_ready_with_cidr "$1"
}

# A node container removed, even one that a SIGKILL cannot end: runc freezes a container's cgroup while it changes
# it, and a runc killed meanwhile (a test kills the runtime mid-run) leaves it frozen, its processes deaf to signals.
remove_pool_container() { # CONTAINER
  $BED_DOCKER rm -f -v "$1" >/dev/null 2>&1 && return 0
  local id; id=$($BED_DOCKER inspect -f '{{.Id}}' "$1" 2>/dev/null) || return 0
  # cgroup v1's freezer, or v2's cgroup.freeze.
  # A cgroup may go while the loop runs (its processes end once thawed): not an error.
  find /sys/fs/cgroup -path "*$id*" \( -name freezer.state -o -name cgroup.freeze \) 2>/dev/null | while read -r f; do
    case "$f" in *freezer.state) s=$(cat "$f" 2>/dev/null) && [ "$s" != THAWED ] && echo THAWED 2>/dev/null > "$f" ;; *) echo 0 2>/dev/null > "$f" ;; esac || true
  done
  $BED_DOCKER rm -f -v "$1" >/dev/null
}

# The node's runtime, kubelet and sshd started where they are stopped (a test run killed while it had them down).
start_stopped_units() { # NAME
  local stopped
  # Only on a node whose boot ended: a node still booting starts its units itself, in its own order.
  stopped=$(timeout 20 $BED_DOCKER exec "$POOL_PREFIX$1" sh -c 'case "$(systemctl is-system-running)" in running|degraded) ;; *) exit 0 ;; esac
    for u in containerd docker cri-docker kubelet ssh; do
      if systemctl cat "$u" >/dev/null 2>&1 && ! systemctl is-active -q "$u"; then echo "$u"; fi; done' 2>/dev/null) ||
    return 0
  [ -n "$stopped" ] || return 0
  log "$1: starting what a killed test left stopped: $(echo $stopped)"
  timeout 60 $BED_DOCKER exec "$POOL_PREFIX$1" systemctl start $stopped >/dev/null 2>&1 || true
}

node_ready_with_cidr() {
  [ -n "$(kubectl get node "$1" -o jsonpath='{.spec.podCIDR}')" ] &&
    [ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

stop_pool() {
  if [ -S "$BED_DOCKER_SOCK" ] && $BED_DOCKER info >/dev/null 2>&1; then
    local c
    for c in $($BED_DOCKER ps -aq --filter label=node-maint-testbed=pool); do remove_pool_container "$c"; done
  fi
  for f in "$TB_RUN"/pids/ssh-relay-*.pid; do [ -f "$f" ] && stop_bg "$(basename "$f" .pid)"; done
  stop_bg api-socket
}

# The bed's SSH client key (for root and the maint user on every node) and its known_hosts.
make_ssh_key() {
  mkdir -p "$TB_STATE/ssh"; chmod 755 "$TB_STATE/ssh"
  [ -f "$SSH_KEY" ] || ssh-keygen -q -t ed25519 -N '' -C node-maint-testbed -f "$SSH_KEY"
  touch "$KNOWN_HOSTS"
}

# Under a lock (nodes are replaced side by side while runs read the file), and only when the line is not there yet:
# a node's host key outlives its container, so a replaced node needs no change.
add_known_host() { # PORT PUBKEY_FILE
  local line; line="[127.0.0.1]:$1 $(cut -d' ' -f1,2 "$2")"
  (
    flock 9
    grep -qxF "$line" "$KNOWN_HOSTS" && exit 0
    { grep -v "^\[127.0.0.1\]:$1 " "$KNOWN_HOSTS" || true; echo "$line"; } > "$KNOWN_HOSTS.tmp.$$"
    mv "$KNOWN_HOSTS.tmp.$$" "$KNOWN_HOSTS"
  ) 9>"$KNOWN_HOSTS.lock"
}
