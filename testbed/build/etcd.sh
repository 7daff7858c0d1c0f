#!/usr/bin/env bash
# Builds etcd 3.5, the line Kubernetes 1.32 runs on: Debian's 3.4 lacks the watch progress requests that newer
# clients' streaming lists need (kwok's pod watch kept failing on it, and its pods' events came tens of seconds late).
set -euo pipefail
. "$(dirname "$0")/common.sh"
out="$TESTBED_CACHE/bin/etcd-$ETCD_VERSION"
lock_build "$(basename "$out")"
built "$out" && { echo "$out"; exit 0; }
w=$(wrapper_dir "etcd-$ETCD_VERSION")
cd "$w"
# server/v3 replaces its sibling modules with ../ paths; a wrapper resolves them to their published twins instead.
printf 'module testbed/etcd\n\ngo 1.23.0\n' > go.mod
log "building etcd $ETCD_VERSION"
go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2>"$w/go-get.log" || { cat "$w/go-get.log" >&2; exit 1; }
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
touch "$out.tmp/.complete"; rm -rf "$out"; mv "$out.tmp" "$out"
echo "$out"
