#!/usr/bin/env bash
# Builds @pulumi/kubernetes's resource plugin (pulumi-resource-kubernetes) from Go modules: pulumi would download it
# from GitHub releases, which cannot be reached here. Facts: ../shared/research/pulumi-kubernetes-offline.md.
set -euo pipefail
. "$(dirname "$0")/common.sh"
export GOSUMDB=off
# The one version of the provider module the proxy serves is the commit tagged v4.25.0: the npm package is pinned to it.
PROVIDER_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
begin_build "pulumi-kubernetes-v$PULUMI_KUBERNETES_VERSION"
mkdir -p "$out.tmp"

# A wrapper module: the provider's go.mod replaces its sdk with a sibling directory (go install refuses that), so
# the wrapper requires the provider and the tagged sdk, and builds a copy of the provider's main package.
w=$(wrapper_dir "pulumi-kubernetes-v$PULUMI_KUBERNETES_VERSION")
cd "$w"
src=$(go mod download -json "$PROVIDER_MODULE@$PULUMI_KUBERNETES_PROVIDER_MODULE" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
printf 'module testbed/pulumi-kubernetes\n\ngo 1.24.7\n\nrequire (\n\t%s %s\n\tgithub.com/pulumi/pulumi-kubernetes/sdk/v4 v%s\n)\n' \
  "$PROVIDER_MODULE" "$PULUMI_KUBERNETES_PROVIDER_MODULE" "$PULUMI_KUBERNETES_VERSION" > go.mod
cp "$src/cmd/pulumi-resource-kubernetes/main.go" .
chmod u+w main.go
# main.go embeds the schema and mapping with the release's version stamped in (upstream's generate.go, which the
# module zip ships without its outputs): the same JSON with "version" set.
node -e '
  const fs = require("node:fs");
  const [dir, version] = process.argv.slice(1);
  const schema = JSON.parse(fs.readFileSync(`${dir}/schema.json`, "utf8"));
  fs.writeFileSync("schema-embed.json", JSON.stringify({ ...schema, version }));
  fs.writeFileSync("terraform-mapping-embed.json", JSON.stringify(JSON.parse(fs.readFileSync(`${dir}/terraform-mapping.json`, "utf8"))));
' "$src/cmd/pulumi-resource-kubernetes" "$PULUMI_KUBERNETES_VERSION"
log "building the Kubernetes provider plugin v$PULUMI_KUBERNETES_VERSION (about 20 minutes cold)"
go mod tidy >/dev/null 2>&1 || true
go build -trimpath -ldflags "-s -w -X $PROVIDER_MODULE/pkg/version.Version=$PULUMI_KUBERNETES_VERSION" \
  -o "$out.tmp/pulumi-resource-kubernetes" .
finish_build
