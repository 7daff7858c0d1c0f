#!/usr/bin/env bash
# The CI dry run of a kind cluster, one script for GitHub's kind (.github/workflows/kind-dry-run.yml) and for the local
# test cluster's (.ci/run): the runbook's dry run through docker exec on every worker, then `pulumi preview` of the
# same upgrade; then a check that neither changed anything (versions, cordons, Leases).
# Usage: runbooks/kind-dry-run.sh CLUSTER PACKAGE=VERSION
# Needs kind, docker, kubectl, pulumi, jq and npx on PATH, and the built program (npm run build); KUBECONFIG the
# cluster's; DOCKER_HOST if not the default daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { sed -n 5,6p "$0" | sed 's/^# //' >&2; exit 2; }
cluster=$1 target=$2
[[ "$cluster" =~ ^[a-z0-9][a-z0-9.-]*$ ]] || { echo "kind-dry-run: bad cluster name: $cluster" >&2; exit 2; }
[[ "$target" =~ ^[a-z0-9][a-z0-9.+-]*=[A-Za-z0-9.+:~-]+$ ]] || { echo "kind-dry-run: want PACKAGE=VERSION, got: $target" >&2; exit 2; }
package=${target%%=*}
mapfile -t workers < <(kind get nodes --name "$cluster" | grep -- '-worker' | sort)
[ ${#workers[@]} -gt 0 ] || { echo "kind-dry-run: cluster $cluster has no workers" >&2; exit 2; }
docker_host=${DOCKER_HOST:-unix:///var/run/docker.sock}

# What a dry run must leave as it was: each worker's package and running daemon, cordons, runbook Leases.
fingerprint() {
  for w in "${workers[@]}"; do
    docker exec "$w" sh -c "dpkg-query -W -f='\${Version} \${db:Status-Abbrev}\n' $package; systemctl show -p MainPID -p ExecMainStartTimestampMonotonic $package"
  done
  kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.unschedulable}{"\n"}{end}'
  kubectl -n kube-system get leases -o name | grep node-maint- || true
}
before=$(fingerprint)

echo "== runbook dry run through docker exec: ${workers[*]}"
npx zx runbooks/dry-run-fleet.mjs "${workers[@]}" --to "$target" --docker-host "$docker_host" --kubeconfig "${KUBECONFIG:?KUBECONFIG must name the kubeconfig of the kind cluster}"

echo "== pulumi preview through docker exec"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# A scratch project (Pulumi.yaml, the built program linked): the stack file and the state never touch the checkout.
mkdir -p "$tmp/project" "$tmp/state"
cp Pulumi.yaml "$tmp/project/"
ln -s "$PWD/dist" "$PWD/node_modules" "$tmp/project/"
cd "$tmp/project"
export PULUMI_HOME="$tmp/home" PULUMI_BACKEND_URL="file://$tmp/state" PULUMI_CONFIG_PASSPHRASE=kind-dry-run \
  PULUMI_SKIP_UPDATE_CHECK=true PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
stack=kind-dry-run config="$tmp/project/Pulumi.kind-dry-run.yaml"
pulumi stack init "$stack" --non-interactive >/dev/null
set_config() { printf '%s' "$2" | pulumi config set --config-file "$config" "node-maint:$1" >/dev/null; }
set_config nodes "$(printf '%s\n' "${workers[@]}" | jq -R . | jq -sc .)"
set_config targets "$(jq -nc --arg p "$package" --arg v "${target#*=}" '{($p): $v}')"
set_config kubeconfig "$KUBECONFIG"
set_config dockerExec "$(printf '%s\n' "${workers[@]}" | jq -R . | jq -sc --arg h "$docker_host" '{dockerHost: $h, containers: (map({(.): .}) | add)}')"
pulumi preview --diff --non-interactive --config-file "$config"

after=$(fingerprint)
if [ "$before" != "$after" ]; then
  echo "kind-dry-run: the dry run changed the cluster:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "== kind dry run: ${#workers[@]} worker(s) planned, nothing changed"
