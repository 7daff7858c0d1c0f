#!/usr/bin/env bash
# Builds kwok, which heartbeats the API-only Node objects of the benchmarks and plays their pods' lifecycle.
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "kwok-$KWOK_VERSION"
log "building kwok $KWOK_VERSION"
mkdir -p "$out.tmp"
GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
finish_build
