# The node-maint agent's image (runbooks/agent/daemonset.yaml), built by the project's own builder
# (runbooks/agent-image.mjs: the pinned Node.js, runtime libraries and nsenter, the bundles from dist/), as a user
# builds it; rebuilt when its inputs change (a test's setup asks for it), cached by that key, and loaded into the
# runtime of the pool or kind nodes named.

agent_image_key() {
  (cd "$TB_ROOT/.." && sha256sum dist/agent/main.js dist/agent/unit.js runbooks/agent-image.mjs runbooks/agent-image.lock.json node_modules/ssh2/package.json package.json) | sha256sum | cut -c1-12
}

# The image's tag (its content's, node-maint/agent:VERSION-HASH); its tarball in the cache.
build_agent_image() {
  local key dir lock
  key=$(agent_image_key); dir="$TESTBED_CACHE/agent-image-$key"
  # Test files ask for it side by side: one builds, the others wait for its tarball (never half written).
  exec {lock}>"$TESTBED_CACHE/agent-image.lock"
  flock "$lock"
  if [ ! -f "$dir/tag" ]; then
    [ -f "$TB_ROOT/../dist/agent/main.js" ] || { echo "testbed: no dist/agent/main.js: run npm run build first" >&2; return 1; }
    rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
    node "$TB_ROOT/../runbooks/agent-image.mjs" --arch amd64 --out "$dir.tmp" | awk '{print $4}' > "$dir.tmp/tag.new"
    mv "$dir.tmp/tag.new" "$dir.tmp/tag"
    rm -rf "$dir"; mv "$dir.tmp" "$dir"
    # Earlier builds (one per change of dist/, about 110 MB each) are not kept.
    find "$TESTBED_CACHE" -maxdepth 1 -name 'agent-image-*' ! -name "agent-image-$key" ! -name 'agent-image.lock' -exec rm -rf {} +
  fi
  exec {lock}>&-
  cat "$dir/tag"
}

# Loads the agent's image into a node's runtime (the one its kubelet uses): a pool node, or a kind node by its name.
# A runtime that has the tag already (content-addressed: the same bytes) is left as it is: a load costs a CPU second.
load_agent_image() { # NODE TAG
  local c="$POOL_PREFIX$1" tar
  tar=$(ls "$TESTBED_CACHE"/agent-image-"$(agent_image_key)"/node-maint-agent-*-amd64.tar)
  if [ -n "$($BED_DOCKER inspect -f '{{index .Config.Labels "io.x-k8s.kind.cluster"}}' "$1" 2>/dev/null)" ]; then
    c=$1
  elif $BED_DOCKER exec "$c" sh -c 'command -v dockerd' >/dev/null; then
    $BED_DOCKER exec "$c" docker image inspect -f . "$2" >/dev/null 2>&1 && return 0
    $BED_DOCKER exec -i "$c" docker load -q < "$tar" >/dev/null
    return
  fi
  $BED_DOCKER exec "$c" ctr -n k8s.io images ls -q "name==docker.io/$2" 2>/dev/null | grep -q . && return 0
  $BED_DOCKER exec -i "$c" ctr -n k8s.io images import - < "$tar" >/dev/null
}
