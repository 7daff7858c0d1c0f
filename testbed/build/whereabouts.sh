#!/usr/bin/env bash
# Builds the whereabouts IPAM plugin (github.com/k8snetworkplumbingwg/whereabouts): a CNI network on a pool node
# allocates pod IPs through it, recorded in IPPool objects of the bed's API server (its CRDs ship in the module).
# Its go.mod has a replace directive, so it builds in a wrapper module that copies it.
set -euo pipefail
. "$(dirname "$0")/common.sh"
begin_build "whereabouts-$WHEREABOUTS_VERSION"
log "building whereabouts $WHEREABOUTS_VERSION"
enter_wrapper "whereabouts-$WHEREABOUTS_VERSION" github.com/k8snetworkplumbingwg/whereabouts "$WHEREABOUTS_VERSION" github.com/k8snetworkplumbingwg/whereabouts/cmd
mkdir -p "$out.tmp"
go build -trimpath -ldflags "-s -w" -o "$out.tmp/whereabouts" github.com/k8snetworkplumbingwg/whereabouts/cmd
finish_build
