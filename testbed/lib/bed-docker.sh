# The bed's own containerd and dockerd, from copies of the binaries, with their own roots and socket: the pool's node
# containers and the kind cluster run there, never on this machine's system containerd.
start_bed_dockerd() {
  local bin="$TB_STATE/bed-bin"
  mkdir -p "$TB_RUN/bed-containerd" "$BED_DOCKER_ROOT" "$bin"
  for b in /usr/bin/containerd /usr/bin/containerd-shim-runc-v2 /usr/sbin/runc /usr/sbin/dockerd /usr/bin/docker-init /usr/sbin/docker-proxy; do
    [ -x "$b" ] && [ ! -x "$bin/$(basename "$b")" ] && cp "$b" "$bin/"
  done
  install -m 0755 "$TB_ROOT/pool/runc-wrapper" "$bin/runc-wrapper"
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

stop_bed_dockerd() { stop_bg bed-dockerd; stop_bg bed-containerd; }
