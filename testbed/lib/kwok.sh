# kwok, for the API-only nodes of the benchmarks (testbed/up --kwok-only N): Node objects with no machine behind them,
# whose pods kwok plays in the API (testbed/kwok/stages.yaml). No test runs a node through it.
start_kwok() {
  write_kubeconfig "$TB_STATE/kwok.kubeconfig" kwok
  # kwok reads its stages once: a kwok started with other stages is restarted.
  local stages; stages=$(sha256sum < "$TB_ROOT/kwok/stages.yaml" | cut -c1-12)
  [ "$(cat "$TB_STATE/kwok.stages" 2>/dev/null)" = "$stages" ] || stop_bg kwok
  echo "$stages" > "$TB_STATE/kwok.stages"
  start_bg kwok "$KWOK_BIN/kwok" --kubeconfig "$TB_STATE/kwok.kubeconfig" --config "$TB_ROOT/kwok/stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.2 --server-address=127.0.0.1:10247 --node-lease-duration-seconds=40
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
