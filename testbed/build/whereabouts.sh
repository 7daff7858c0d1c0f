#!/usr/bin/env bash
# Builds the whereabouts IPAM plugin (github.com/k8snetworkplumbingwg/whereabouts): a CNI network on a pool node
# allocates pod IPs through it, recorded in IPPool objects of the bed's API server (its CRDs ship in the module).
# Its go.mod has a replace block, so it builds in a wrapper module that copies it (go install refuses those).
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "whereabouts-$WHEREABOUTS_VERSION"
w=$(wrapper_dir "whereabouts-$WHEREABOUTS_VERSION")
cd "$w"
upstream_mod=$(go mod download -json "github.com/k8snetworkplumbingwg/whereabouts@$WHEREABOUTS_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  echo "module testbed/whereabouts"; echo
  grep -m1 '^go ' "$upstream_mod"; echo
  echo "require github.com/k8snetworkplumbingwg/whereabouts $WHEREABOUTS_VERSION"; echo
  grep '^replace ' "$upstream_mod" || true
  sed -n '/^replace (/,/^)/p' "$upstream_mod"
} > go.mod
printf 'package tools\n\nimport _ "github.com/k8snetworkplumbingwg/whereabouts/cmd"\n' > tools.go
log "building whereabouts $WHEREABOUTS_VERSION"
go mod tidy >/dev/null 2>&1 || true
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w" -o "$out.tmp/whereabouts" github.com/k8snetworkplumbingwg/whereabouts/cmd
finish_build
