#!/usr/bin/env bash
# Builds kind, which creates the bed's kind cluster from the node image testbed/lib/kind.sh assembles.
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "kind-$KIND_VERSION"
log "building kind $KIND_VERSION"
mkdir -p "$out.tmp"
GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
finish_build
