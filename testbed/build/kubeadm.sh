#!/usr/bin/env bash
# Builds kubeadm for the kind node image, in the Kubernetes wrapper module (same version stamps, warm build cache).
set -euo pipefail
. "$(dirname "$0")/common.sh"
bash "$(dirname "$0")/kubernetes.sh" >/dev/null
begin_build "kubeadm-$K8S_VERSION"
cd "$(wrapper_dir "kubernetes-$K8S_VERSION")"
mkdir -p "$out.tmp"
log "building kubeadm $K8S_VERSION"
go build -trimpath -ldflags "-s -w $(k8s_ldflags)" -o "$out.tmp/" k8s.io/kubernetes/cmd/kubeadm
finish_build
