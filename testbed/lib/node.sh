# The real node on this machine: containerd, dockerd, cri-dockerd with kubenet, kubelet; reachable over SSH.
STANDIN_UNITS=/etc/systemd-standin
SYSTEMCTL=/usr/local/bin/systemctl

install_systemctl_standin() { # ROOT: / for this machine, a rootfs for a fleet host
  local root=${1:-/}
  install -D -m 0755 "$TB_ROOT/node/systemctl" "$root/usr/local/bin/systemctl"
  mkdir -p "$root$STANDIN_UNITS"
}

write_unit() { # UNITS_DIR NAME EXEC_START READY_CHECK
  cat > "$1/$2.service" <<UNIT
# node-maint test bed unit for the systemctl stand-in (testbed/node/systemctl)
ExecStart='$3'
ReadyCheck='$4'
UNIT
}

make_node_iface() {
  ip link show "$NODE_IFACE" >/dev/null 2>&1 || ip link add "$NODE_IFACE" type bridge
  [[ "$(ip addr show dev "$NODE_IFACE")" == *" $NODE_IP/"* ]] || ip addr add "$NODE_IP/32" dev "$NODE_IFACE"
  ip link set "$NODE_IFACE" up
}

install_node_units() {
  install -m 0755 "$CRI_DOCKERD_BIN/cri-dockerd" /usr/local/bin/cri-dockerd
  install -m 0755 "$K8S_BIN/kubelet" /usr/local/bin/kubelet
  install -m 0755 "$CRICTL_BIN/crictl" /usr/local/bin/crictl
  echo "runtime-endpoint: unix:///run/cri-dockerd.sock" > /etc/crictl.yaml
  install -D -m 0755 "$TB_ROOT/node/runc-wrapper" /usr/local/lib/node-maint-testbed/runc-wrapper
  install -D -m 0755 "$TB_ROOT/node/kubelet-with-faults" /usr/local/lib/node-maint-testbed/kubelet-with-faults
  install_systemctl_standin /
  write_unit "$STANDIN_UNITS" containerd "/usr/bin/containerd" "ctr version"
  write_unit "$STANDIN_UNITS" docker "/usr/sbin/dockerd --containerd=/run/containerd/containerd.sock --bridge=none --iptables=false --ip-masq=false --add-runtime=tb-runc=/usr/local/lib/node-maint-testbed/runc-wrapper --default-runtime=tb-runc" "docker info"
  write_unit "$STANDIN_UNITS" cri-docker "/usr/local/bin/cri-dockerd --container-runtime-endpoint=unix:///run/cri-dockerd.sock --network-plugin=kubenet --cni-bin-dir=/usr/lib/cni --cni-cache-dir=/var/lib/cni/cache --pod-infra-container-image=registry.k8s.io/pause:3.10 --hairpin-mode=hairpin-veth" "test -S /run/cri-dockerd.sock"
  # No ready check: kubelet.service is Type=simple, so `systemctl start kubelet` returns before kubelet has posted.
  write_unit "$STANDIN_UNITS" kubelet "/usr/local/lib/node-maint-testbed/kubelet-with-faults --config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/kubernetes/kubelet.kubeconfig --hostname-override=$REAL_NODE --node-ip=$NODE_IP" ""
}

write_kubelet_config() {
  mkdir -p /var/lib/kubelet /etc/kubernetes/pki
  install -m 0644 "$TB_PKI/ca.crt" /etc/kubernetes/pki/ca.crt
  write_kubeconfig /etc/kubernetes/kubelet.kubeconfig "node-$REAL_NODE"
  cat > /var/lib/kubelet/config.yaml <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix:///run/cri-dockerd.sock
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
maxPods: 110
serializeImagePulls: false
resolvConf: /etc/resolv.conf
CFG
}

# Images come from nowhere but here: a static pause binary and busybox, imported into the node's docker.
import_node_images() {
  docker image inspect registry.k8s.io/pause:3.10 >/dev/null 2>&1 && docker image inspect testbed/busybox:1 >/dev/null 2>&1 && return 0
  local d; d=$(mktemp -d)
  mkdir -p "$d/pause" "$d/busybox/bin"
  gcc -static -O2 -o "$d/pause/pause" "$TB_ROOT/images/pause.c"
  tar -C "$d/pause" -c . | docker import -c 'ENTRYPOINT ["/pause"]' - registry.k8s.io/pause:3.10 >/dev/null
  cp /bin/busybox "$d/busybox/bin/busybox"
  for a in sh sleep ls cat echo true false ip hostname; do ln -s busybox "$d/busybox/bin/$a"; done
  tar -C "$d/busybox" -c . | docker import -c 'CMD ["/bin/sh"]' - testbed/busybox:1 >/dev/null
  rm -rf "$d"
}

setup_node_ssh() {
  local s="$TB_STATE/ssh"
  mkdir -p "$s/authorized_keys" /run/sshd; chmod 755 "$s"
  id "$SSH_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$SSH_USER"
  usermod -p '*' "$SSH_USER"   # no password, but not locked: key auth only
  echo "$SSH_USER ALL=(ALL) NOPASSWD:ALL" > /etc/sudoers.d/node-maint-testbed; chmod 440 /etc/sudoers.d/node-maint-testbed
  [ -f "$SSH_KEY" ] || ssh-keygen -q -t ed25519 -N '' -C node-maint-testbed -f "$SSH_KEY"
  [ -f "$s/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$s/ssh_host_ed25519_key"
  for u in root "$SSH_USER"; do install -m 0644 "$SSH_KEY.pub" "$s/authorized_keys/$u"; done
  cat > "$s/sshd_config" <<CFG
Port $REAL_NODE_SSH_PORT
ListenAddress 127.0.0.1
HostKey $s/ssh_host_ed25519_key
AuthorizedKeysFile $s/authorized_keys/%u
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
PidFile $TB_RUN/sshd.pid
Subsystem sftp internal-sftp
CFG
  start_bg sshd /usr/sbin/sshd -D -e -f "$s/sshd_config"
  wait_for "sshd on 127.0.0.1:$REAL_NODE_SSH_PORT" 30 bash -c "echo > /dev/tcp/127.0.0.1/$REAL_NODE_SSH_PORT"
  add_known_host "$REAL_NODE_SSH_PORT" "$s/ssh_host_ed25519_key.pub"
}

add_known_host() { # PORT PUBKEY_FILE
  touch "$KNOWN_HOSTS"
  grep -v "^\[127.0.0.1\]:$1 " "$KNOWN_HOSTS" > "$KNOWN_HOSTS.tmp" || true
  echo "[127.0.0.1]:$1 $(cut -d' ' -f1,2 "$2")" >> "$KNOWN_HOSTS.tmp"
  mv "$KNOWN_HOSTS.tmp" "$KNOWN_HOSTS"
}

# The bed's local apt repository as one more package source of the real node, and the runtime packages held, as
# production nodes hold them (apt-mark hold): the runbook must change and hold them again.
REAL_NODE_APT_LIST=/etc/apt/sources.list.d/node-maint-testbed.list
HELD_PACKAGES="containerd docker.io"
use_local_apt_repo() {
  local line="deb [trusted=yes] file:$LOCAL_APT_REPO ./"
  if [ "$(cat "$REAL_NODE_APT_LIST" 2>/dev/null)" != "$line" ]; then
    echo "$line" > "$REAL_NODE_APT_LIST"
    apt-get update -qq -o Dir::Etc::sourcelist="$REAL_NODE_APT_LIST" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 2>/dev/null
  fi
  apt-mark hold $HELD_PACKAGES >/dev/null
}

start_real_node() {
  use_local_apt_repo
  make_node_iface
  install_node_units
  write_kubelet_config
  mkdir -p /var/lib/cni/cache /etc/cni/net.d
  "$SYSTEMCTL" start containerd docker
  import_node_images
  "$SYSTEMCTL" start cri-docker kubelet
  setup_node_ssh
  wait_for "$REAL_NODE Ready with a PodCIDR" 180 node_ready_with_cidr "$REAL_NODE"
}

node_ready_with_cidr() {
  [ -n "$(kubectl get node "$1" -o jsonpath='{.spec.podCIDR}')" ] &&
    [ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

stop_real_node() {
  [ -x /usr/local/bin/systemctl ] && grep -q 'test bed' /usr/local/bin/systemctl 2>/dev/null || return 0
  "$SYSTEMCTL" stop kubelet
  # Pods' containers first, so that no sandbox outlives the bed (their networks go with cbr0 below).
  if docker info >/dev/null 2>&1; then
    ids=$(docker ps -aq --filter label=io.kubernetes.pod.uid); [ -n "$ids" ] && docker rm -f $ids >/dev/null
  fi
  "$SYSTEMCTL" stop cri-docker docker containerd
  stop_bg sshd
}
