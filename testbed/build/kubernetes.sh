#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl from the k8s.io/kubernetes module.
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "kubernetes-$K8S_VERSION"
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}; patch=${K8S_VERSION##*.}
w=$(wrapper_dir "kubernetes-$K8S_VERSION")
cd "$w"
# k8s.io/kubernetes replaces its staging modules with ./staging paths; point each at its published twin instead.
upstream_mod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
staging=$(sed -n 's#^\s*k8s.io/\([a-z-]*\) => ./staging/.*#\1#p' "$upstream_mod")
{
  echo "module testbed/kubernetes"; echo; echo "go 1.24.0"; echo
  echo "require k8s.io/kubernetes $K8S_VERSION"; echo
  for m in $staging; do echo "replace k8s.io/$m => k8s.io/$m v0.$minor.$patch"; done
} > "$w/go.mod"
printf 'package tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kubelet"\n)\n' > "$w/tools.go"
log "resolving k8s.io/kubernetes $K8S_VERSION modules"
go mod tidy >/dev/null 2>&1 || true
go mod download k8s.io/kubernetes
mkdir -p "$out.tmp"
log "building kubernetes $K8S_VERSION (cold: tens of minutes on 2 cores)"
go build -trimpath -ldflags "-s -w $(k8s_ldflags)" -o "$out.tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
finish_build
