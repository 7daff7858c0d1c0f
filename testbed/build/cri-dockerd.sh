#!/usr/bin/env bash
# Builds cri-dockerd (the dockershim successor) from its Go module; its replace block pins k8s 1.29 and must be copied.
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "cri-dockerd-$CRI_DOCKERD_VERSION"
w=$(wrapper_dir "cri-dockerd-$CRI_DOCKERD_VERSION")
cd "$w"
upstream_mod=$(go mod download -json "github.com/Mirantis/cri-dockerd@$CRI_DOCKERD_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  echo "module testbed/cri-dockerd"; echo
  grep -m1 '^go ' "$upstream_mod"; echo
  echo "require github.com/Mirantis/cri-dockerd $CRI_DOCKERD_VERSION"; echo
  sed -n '/^replace (/,/^)/p' "$upstream_mod"
} > go.mod
printf 'package tools\n\nimport _ "github.com/Mirantis/cri-dockerd"\n' > tools.go
log "building cri-dockerd $CRI_DOCKERD_VERSION"
go mod tidy >/dev/null 2>&1 || true
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w -X github.com/Mirantis/cri-dockerd/cmd/version.Version=${CRI_DOCKERD_VERSION#v}" \
  -o "$out.tmp/cri-dockerd" github.com/Mirantis/cri-dockerd
finish_build
