# The bed's own workloads on the pool (a DaemonSet), whereabouts' CRDs (test 27 runs a whereabouts network), and how
# to reach the bed. Calico's CRDs come with Calico (testbed/lib/calico.sh).
seed_workloads() {
  kubectl apply -f "$TB_ROOT/manifests/workloads.yaml" \
    -f "$WHEREABOUTS_CRDS/whereabouts.cni.cncf.io_ippools.yaml" -f "$WHEREABOUTS_CRDS/whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml" >/dev/null
  wait_for "the node agents running on every pool node" 180 node_agents_running
}

node_agents_running() {
  local want; want=$(kubectl get nodes -l node-maint.io/testbed=pool -o name | wc -l)
  [ "$(kubectl -n testbed-system get ds node-agent -o jsonpath='{.status.numberReady}')" = "$want" ]
}

write_env() {
  local nodes='[]' c n k
  # Every node of the pool but one a test powered off: a node a running test stopped for a while is still the pool's.
  for c in $($BED_DOCKER ps -a --filter label=node-maint-testbed=pool --format '{{.Names}}' | sort -V); do
    n=${c#"$POOL_PREFIX"}; k=${n%%-node-*}
    powered_off "$n" && continue
    nodes=$(jq --arg n "$n" --arg c "$c" --arg f "${k%-calico}" --arg net "$([ "$k" = "${k%-calico}" ] && echo default || echo calico)" \
      --argjson p "$(pool_ssh_port "$k" "${n##*-}")" '. + [{name: $n, flavour: $f, network: $net, sshPort: $p, container: $c}]' <<<"$nodes")
  done
  local kind='null'
  [ -s "$KIND_KUBECONFIG" ] && kind=$(jq -n --arg kc "$KIND_KUBECONFIG" --arg name "$KIND_CLUSTER" --arg cp "$KIND_CLUSTER-control-plane" --arg bin "$KIND_BIN/kind" \
    --argjson workers "$(kind_workers | jq -R . | jq -sc .)" '{name: $name, kubeconfig: $kc, controlPlane: $cp, workers: $workers, bin: $bin}')
  jq -n --arg kc "$ADMIN_KUBECONFIG" --arg key "$SSH_KEY" --arg kh "$KNOWN_HOSTS" --arg user "$SSH_USER" \
    --arg bed "unix://$BED_DOCKER_SOCK" --arg kubectl "$K8S_BIN/kubectl" --arg pulumi "$PULUMI_BIN" --arg pulumiKubernetes "$PULUMI_KUBERNETES_BIN/pulumi-resource-kubernetes" --arg pulumiKubernetesVersion "$PULUMI_KUBERNETES_VERSION" --arg run "$TB_RUN" --arg cnitool "$CNITOOL_BIN/cnitool" --arg whereabouts "$WHEREABOUTS_BIN/whereabouts" \
    --arg calicoctl "$CALICO_BIN/calicoctl" --arg calicoPool "$CALICO_POOL_CIDR" \
    --arg prometheus "$PROMETHEUS_URL" --arg textfileDir "$TEXTFILE_DIR" \
    --arg old "$CONTAINERD_OLD" --arg new "$CONTAINERD_NEW" --arg faulty "$CONTAINERD_FAULTY" --arg dockerOld "$DOCKER_OLD" --arg dockerNew "$DOCKER_NEW" --argjson nodes "$nodes" --argjson kind "$kind" \
    '{kubeconfig: $kc, sshKey: $key, knownHosts: $kh, sshUser: $user, bedDockerHost: $bed, kubectl: $kubectl,
      pulumiDir: $pulumi, pulumiKubernetes: {plugin: $pulumiKubernetes, version: $pulumiKubernetesVersion}, run: $run, containerd: {old: $old, new: $new, faulty: $faulty}, docker: {old: $dockerOld, new: $dockerNew},
      nodes: $nodes, kind: $kind, prometheus: $prometheus, textfileDir: $textfileDir, cnitool: $cnitool, whereabouts: $whereabouts,
      calico: {calicoctl: $calicoctl, pool: $calicoPool}}' | write_atomically "$TB_STATE/env.json"
}
