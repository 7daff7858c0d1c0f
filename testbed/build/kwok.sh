#!/usr/bin/env bash
# Builds kwok, which heartbeats the fleet's Node objects and plays their pods' lifecycle.
set -euo pipefail
. "$(dirname "$0")/common.sh"
out="$TESTBED_CACHE/bin/kwok-$KWOK_VERSION"
lock_build "$(basename "$out")"
built "$out" && { echo "$out"; exit 0; }
log "building kwok $KWOK_VERSION"
mkdir -p "$out.tmp"
GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
touch "$out.tmp/.complete"; rm -rf "$out"; mv "$out.tmp" "$out"
echo "$out"
