#!/usr/bin/env bash
# Builds cnitool (github.com/containernetworking/cni, the reference libcni front end): the tests use it on a node as
# a non-Kubernetes CNI user would (podman-style networks with libcni's cache and host-local reservations).
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "cnitool-$CNITOOL_VERSION"
log "building cnitool $CNITOOL_VERSION"
mkdir -p "$out.tmp"
# `go install pkg@version` builds with the module's own go.mod, and takes no -mod flag.
GOFLAGS= GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "github.com/containernetworking/cni/cnitool@$CNITOOL_VERSION"
finish_build
