#!/usr/bin/env bash
# Builds cri-dockerd (the dockershim successor) from its Go module; its replace block pins k8s 1.29 and must be copied.
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "cri-dockerd-$CRI_DOCKERD_VERSION"
log "building cri-dockerd $CRI_DOCKERD_VERSION"
enter_wrapper "cri-dockerd-$CRI_DOCKERD_VERSION" github.com/Mirantis/cri-dockerd "$CRI_DOCKERD_VERSION" github.com/Mirantis/cri-dockerd
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w -X github.com/Mirantis/cri-dockerd/cmd/version.Version=${CRI_DOCKERD_VERSION#v}" \
  -o "$out.tmp/cri-dockerd" github.com/Mirantis/cri-dockerd
finish_build
