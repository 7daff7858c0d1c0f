#!/usr/bin/env bash
# Builds the Pulumi CLI and its Node.js language host from Go modules, plus the dynamic-provider shim.
set -euo pipefail
. "$(dirname "$0")/common.sh"
# The checksum database behind the proxy does not answer for these modules; the proxy itself is still TLS.
export GOSUMDB=off
# The language host's own module is not served by the proxy; the last sdk/v3 that still carried it is.
LANGUAGE_HOST_SDK=${LANGUAGE_HOST_SDK:-v3.68.0}
begin_build "pulumi-$PULUMI_VERSION"
mkdir -p "$out.tmp"

w=$(wrapper_dir "pulumi-$PULUMI_VERSION")
cd "$w"
cat > go.mod <<MOD
module testbed/pulumi

go 1.25.11

require github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION

replace github.com/pulumi/pulumi/sdk/v3 => github.com/pulumi/pulumi/sdk/v3 $PULUMI_VERSION

replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e
MOD
printf 'package tools\n\nimport _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"\n' > tools.go
log "building the Pulumi CLI $PULUMI_VERSION"
go mod tidy >/dev/null 2>&1 || true
go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
  -o "$out.tmp/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi

w=$(wrapper_dir "pulumi-language-nodejs-$LANGUAGE_HOST_SDK")
cd "$w"
printf 'module testbed/pulumi-language-nodejs\n\ngo 1.18\n\nrequire github.com/pulumi/pulumi/sdk/v3 %s\n' "$LANGUAGE_HOST_SDK" > go.mod
upstream_mod=$(go mod download -json "github.com/pulumi/pulumi/sdk/v3@$LANGUAGE_HOST_SDK" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
grep '^replace ' "$upstream_mod" >> go.mod || true
printf 'package tools\n\nimport _ "github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs"\n' > tools.go
log "building the Node.js language host from sdk $LANGUAGE_HOST_SDK"
go mod tidy >/dev/null 2>&1 || true
go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
  -o "$out.tmp/pulumi-language-nodejs" github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs

# Dynamic providers run in this shim, with the program's own SDK: it is not in the npm package, so the bed writes it.
# The engine starts it in the program's directory; the SDK is in the nearest node_modules above.
cat > "$out.tmp/pulumi-resource-pulumi-nodejs" <<'SHIM'
#!/bin/sh
d=$PWD
while [ "$d" != / ] && [ ! -f "$d/node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js" ]; do d=$(dirname "$d"); done
exec node "$d/node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js" "$@"
SHIM
chmod +x "$out.tmp/pulumi-resource-pulumi-nodejs"
finish_build
