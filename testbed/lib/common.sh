# Shared settings of the local test cluster. Sourced by up, down, status, env and the lib/ scripts.
TB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$TB_ROOT/build/common.sh"
TB_STATE=${TB_STATE:-/var/lib/node-maint-testbed}
TB_RUN=${TB_RUN:-/run/node-maint-testbed}
TB_LOGS="$TB_STATE/logs"
TB_PKI="$TB_STATE/pki"
K8S_BIN="$TESTBED_CACHE/bin/kubernetes-$K8S_VERSION"
CRI_DOCKERD_BIN="$TESTBED_CACHE/bin/cri-dockerd-$CRI_DOCKERD_VERSION"
KWOK_BIN="$TESTBED_CACHE/bin/kwok-$KWOK_VERSION"
PULUMI_BIN="$TESTBED_CACHE/bin/pulumi-$PULUMI_VERSION"
PULUMI_KUBERNETES_BIN="$TESTBED_CACHE/bin/pulumi-kubernetes-v$PULUMI_KUBERNETES_VERSION"
CRICTL_BIN="$TESTBED_CACHE/bin/crictl-$CRI_TOOLS_VERSION"
CNITOOL_BIN="$TESTBED_CACHE/bin/cnitool-$CNITOOL_VERSION"
WHEREABOUTS_BIN="$TESTBED_CACHE/bin/whereabouts-$WHEREABOUTS_VERSION"
# Its IPPool and OverlappingRangeIPReservation CRDs, as its module ships them.
WHEREABOUTS_CRDS="$GOMODCACHE/github.com/k8snetworkplumbingwg/whereabouts@$WHEREABOUTS_VERSION/doc/crds"
ETCD_BIN="$TESTBED_CACHE/bin/etcd-$ETCD_VERSION"
# Calico's CNI plugin (calico, calico-ipam) and calicoctl; its CRDs and manifests as its module ships them.
CALICO_BIN="$TESTBED_CACHE/bin/calico-$CALICO_VERSION"
CALICO_MODULE="$GOMODCACHE/github.com/projectcalico/calico@$CALICO_VERSION"
KIND_BIN="$TESTBED_CACHE/bin/kind-$KIND_VERSION"
KUBEADM_BIN="$TESTBED_CACHE/bin/kubeadm-$K8S_VERSION"
# kind's node files (its entrypoint, kubelet slice, sysctl settings), as its module ships them: the kind image and
# the pool's images take them from there.
KIND_FILES="$GOMODCACHE/sigs.k8s.io/kind@$KIND_VERSION/images/base/files"

# Addresses: everything on loopback; the pool's nodes have no network but their own (testbed/lib/pool.sh).
APISERVER_PORT=6443
APISERVER_URL="https://127.0.0.1:$APISERVER_PORT"
ETCD_URL="http://127.0.0.1:23790"
CLUSTER_CIDR=10.128.0.0/14
SERVICE_CIDR=10.96.0.0/16
NODE_CIDR_MASK=25
CONTAINERD_OLD=${CONTAINERD_OLD:-1.6.20~ds1-1+deb12u2}
CONTAINERD_NEW=${CONTAINERD_NEW:-1.6.20~ds1-1+deb12u3}
# Debian's +deb12u3 repacked with fault hooks in its maintainer scripts (testbed/packages/fault-hooks.sh).
CONTAINERD_FAULTY="$CONTAINERD_NEW+nmtest1"
# docker.io has one version in bookworm: the upgrade goes to Debian's binaries repacked as a higher version (said in
# its changelog), with the same fault hooks, so dockerd is upgraded and rolled back through the real apt.
DOCKER_OLD=${DOCKER_OLD:-20.10.24+dfsg1-1+deb12u1+b6}
DOCKER_NEW="$DOCKER_OLD+nmtest1"
ADMIN_KUBECONFIG="$TB_STATE/admin.kubeconfig"
SSH_KEY="$TB_STATE/ssh/id_ed25519"
KNOWN_HOSTS="$TB_STATE/ssh/known_hosts"
SSH_USER=maint
# The bed's own dockerd (testbed/lib/bed-docker.sh): the pool's nodes and the kind cluster run there.
BED_DOCKER_SOCK="$TB_RUN/docker.sock"
BED_DOCKER_ROOT="$TB_STATE/bed-docker"
BED_DOCKER="docker -H unix://$BED_DOCKER_SOCK"

kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
# write_atomically FILE [MODE] < CONTENT: readers (a suite's runs, while a demo's testbed/up writes the bed's files
# again) see the old file or the new one, never the emptied one a `> FILE` leaves while its content is made.
write_atomically() { local tmp="$1.tmp.$$"; cat > "$tmp" && chmod "${2:-644}" "$tmp" && mv -f "$tmp" "$1"; }

# A bed-owned background process: started detached, its PID and start time recorded, so that down ends exactly it
# and a machine restored from a snapshot (dead processes, stale PID files) is never mistaken for a running bed.
proc_start() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; }
start_bg() {
  local name=$1; shift
  mkdir -p "$TB_RUN/pids" "$TB_LOGS"
  if bg_alive "$name"; then return 0; fi
  setsid "$@" </dev/null >>"$TB_LOGS/$name.log" 2>&1 &
  local pid=$!
  echo "$pid $(proc_start "$pid")" > "$TB_RUN/pids/$name.pid"
}
bg_pid() { local pid started f="$TB_RUN/pids/$1.pid"; [ -f "$f" ] && read -r pid started < "$f" || return 1; [ -n "$started" ] && [ "$(proc_start "$pid")" = "$started" ] && echo "$pid"; }
bg_alive() { bg_pid "$1" >/dev/null; }
stop_bg() {
  local name=$1 p
  if p=$(bg_pid "$name"); then
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 50); do [ -n "$(proc_start "$p")" ] || break; sleep 0.2; done
    kill -KILL "$p" 2>/dev/null || true
  fi
  rm -f "$TB_RUN/pids/$name.pid"
}

# timed NAME COMMAND...: runs the command in this shell and keeps how long it took, for the summary `timings` prints.
TIMINGS=()
timed() {
  local name=$1 t=$SECONDS rc=0; shift
  "$@" || rc=$?
  TIMINGS+=("$name $((SECONDS - t))s")
  return $rc
}
timings() { local out="" t; for t in "${TIMINGS[@]}"; do out+="${out:+, }$t"; done; echo "$out"; }

# wait_for DESCRIPTION SECONDS COMMAND...: polls until the command succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $end ] && { log "timed out after ${secs}s waiting for $what"; return 1; }
    sleep 0.5
  done
}
