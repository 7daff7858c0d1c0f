# Seeds workloads over the nodes and records how to reach the bed.
seed_workloads() {
  kubectl apply -f "$TB_ROOT/manifests/workloads.yaml" >/dev/null
  wait_for "the seeded pods on $REAL_NODE to run" 180 seeded_pods_running
}

seeded_pods_running() {
  local pending
  pending=$(kubectl get pods -n demo --field-selector "spec.nodeName=$REAL_NODE" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -vc Running)
  [ "$pending" = 0 ] && [ -n "$(kubectl get pods -n demo --field-selector "spec.nodeName=$REAL_NODE" -o name)" ]
}

write_env() {
  local nodes
  nodes=$(jq -n --arg real "$REAL_NODE" --argjson port "$REAL_NODE_SSH_PORT" '[{name: $real, sshPort: $port, container: null}]')
  if [ -S "$BED_DOCKER_SOCK" ]; then
    for c in $($BED_DOCKER ps --filter label=node-maint-testbed=fleet --format '{{.Names}}' | sort -V); do
      local n=${c#"$FLEET_PREFIX"} i; i=${n#fleet-}
      nodes=$(jq --arg n "$n" --arg c "$c" --argjson p $((FLEET_SSH_BASE_PORT + i)) '. + [{name: $n, sshPort: $p, container: $c}]' <<<"$nodes")
    done
  fi
  local kind='null'
  [ -s "$KIND_KUBECONFIG" ] && kind=$(jq -n --arg kc "$KIND_KUBECONFIG" --arg name "$KIND_CLUSTER" --arg cp "$KIND_CLUSTER-control-plane" --arg bin "$KIND_BIN/kind" \
    --argjson workers "$(kind_workers | jq -R . | jq -sc .)" '{name: $name, kubeconfig: $kc, controlPlane: $cp, workers: $workers, bin: $bin}')
  jq -n --arg kc "$ADMIN_KUBECONFIG" --arg key "$SSH_KEY" --arg kh "$KNOWN_HOSTS" --arg user "$SSH_USER" \
    --arg bed "unix://$BED_DOCKER_SOCK" --arg kubectl "$K8S_BIN/kubectl" --arg pulumi "$PULUMI_BIN" \
    --arg prometheus "$PROMETHEUS_URL" --arg textfileDir "$TEXTFILE_DIR" \
    --arg old "$CONTAINERD_OLD" --arg new "$CONTAINERD_NEW" --arg faulty "$CONTAINERD_FAULTY" --arg dockerOld "$DOCKER_OLD" --arg dockerNew "$DOCKER_NEW" --argjson nodes "$nodes" --argjson kind "$kind" \
    '{kubeconfig: $kc, sshKey: $key, knownHosts: $kh, sshUser: $user, bedDockerHost: $bed, kubectl: $kubectl,
      pulumiDir: $pulumi, containerd: {old: $old, new: $new, faulty: $faulty}, docker: {old: $dockerOld, new: $dockerNew}, realNode: $nodes[0].name, nodes: $nodes, kind: $kind,
      prometheus: $prometheus, textfileDir: $textfileDir}' > "$TB_STATE/env.json"
}
