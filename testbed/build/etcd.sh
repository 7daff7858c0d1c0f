#!/usr/bin/env bash
# Builds etcd 3.5, the line Kubernetes 1.32 runs on: Debian's 3.4 lacks the watch progress requests that newer
# clients' streaming lists need (kwok's pod watch kept failing on it, and its pods' events came tens of seconds late).
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "etcd-$ETCD_VERSION"
w=$(wrapper_dir "etcd-$ETCD_VERSION")
cd "$w"
# server/v3 replaces its sibling modules with ../ paths; a wrapper resolves them to their published twins instead.
printf 'module testbed/etcd\n\ngo 1.23.0\n' > go.mod
log "building etcd $ETCD_VERSION"
go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2>"$w/go-get.log" || { cat "$w/go-get.log" >&2; exit 1; }
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
finish_build
