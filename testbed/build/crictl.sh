#!/usr/bin/env bash
# Builds crictl from sigs.k8s.io/cri-tools; its go.mod points k8s.io modules at kubernetes staging paths, so the
# wrapper points each at its published twin of the same Kubernetes line.
set -euo pipefail
. "$(dirname "$0")/common.sh"
CRI_TOOLS_K8S=${CRI_TOOLS_K8S:-v1.30.14}
begin_build "crictl-$CRI_TOOLS_VERSION"
w=$(wrapper_dir "crictl-$CRI_TOOLS_VERSION")
cd "$w"
upstream_mod=$(go mod download -json "sigs.k8s.io/cri-tools@$CRI_TOOLS_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
minor=${CRI_TOOLS_K8S#v1.}
{
  echo "module testbed/crictl"; echo; grep -m1 '^go ' "$upstream_mod"; echo
  # Its go.mod still declares the old github.com path; served only under sigs.k8s.io.
  echo "require github.com/kubernetes-sigs/cri-tools $CRI_TOOLS_VERSION"; echo
  echo "replace github.com/kubernetes-sigs/cri-tools => sigs.k8s.io/cri-tools $CRI_TOOLS_VERSION"
  sed -n '/^replace (/,/^)/p' "$upstream_mod" | sed -n 's#^\s*\(k8s.io/[a-z-]*\) => k8s.io/kubernetes/staging.*#\1#p' |
    while read -r m; do echo "replace $m => $m v0.$minor"; done
  echo "replace k8s.io/kubernetes => k8s.io/kubernetes $CRI_TOOLS_K8S"
} > go.mod
printf 'package tools\n\nimport _ "github.com/kubernetes-sigs/cri-tools/cmd/crictl"\n' > tools.go
log "building crictl $CRI_TOOLS_VERSION"
go mod tidy >/dev/null 2>&1 || true
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w -X github.com/kubernetes-sigs/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION" -o "$out.tmp/crictl" github.com/kubernetes-sigs/cri-tools/cmd/crictl
finish_build
