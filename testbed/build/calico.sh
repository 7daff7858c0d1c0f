#!/usr/bin/env bash
# Builds Calico's CNI plugin (one binary, installed as `calico` and `calico-ipam`: it picks its role from its own
# name) and calicoctl from the calico monorepo module, for real calico-ipam allocations on the bed's Calico nodes.
# The proxy serves the module at one pseudo-version (Calico 3.28) but not its nested api module, which the module's
# go.mod replaces with ./api: that source comes from ../shared/third-party (CALICO_API_TARBALL), extracted into this
# cache, never into the repository. hcsshim (only the Windows dataplane imports it) is refused: `go mod tidy -e`.
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "calico-$CALICO_VERSION"
[ -f "$CALICO_API_TARBALL" ] || { log "calico: the api source $CALICO_API_TARBALL is missing"; exit 1; }
log "building calico $CALICO_VERSION (the CNI plugin and calicoctl)"
api="$TESTBED_CACHE/src/calico-api-$CALICO_VERSION"
if [ ! -f "$api/go.mod" ]; then
  rm -rf "$api.tmp"; mkdir -p "$api.tmp"
  tar -xzf "$CALICO_API_TARBALL" -C "$api.tmp" --strip-components=1   # its one top folder is the api/ folder
  [ -f "$api.tmp/go.mod" ] || { log "calico: $CALICO_API_TARBALL holds no go.mod at its top folder"; exit 1; }
  rm -rf "$api"; mv "$api.tmp" "$api"
fi
cd "$(wrapper_dir "calico-$CALICO_VERSION")"
upstream_mod=$(go mod download -json "github.com/projectcalico/calico@$CALICO_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  echo "module testbed/calico"; echo
  grep -m1 '^go ' "$upstream_mod"; echo
  echo "require github.com/projectcalico/calico $CALICO_VERSION"; echo
  echo "replace github.com/projectcalico/api => $api"; echo
  grep -E '^replace [^(]' "$upstream_mod" | grep -v 'projectcalico/api' || true
  sed -n '/^replace (/,/^)/p' "$upstream_mod" | grep -v 'projectcalico/api'
} > go.mod
printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "github.com/projectcalico/calico/cni-plugin/cmd/calico"\n\t_ "github.com/projectcalico/calico/calicoctl/calicoctl"\n)\n' > tools.go
go mod tidy -e >/dev/null 2>&1 || true
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w" -o "$out.tmp/calico" github.com/projectcalico/calico/cni-plugin/cmd/calico
go build -trimpath -ldflags "-s -w" -o "$out.tmp/calicoctl" github.com/projectcalico/calico/calicoctl/calicoctl
ln -s calico "$out.tmp/calico-ipam"
finish_build
