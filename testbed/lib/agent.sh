# The node-maint agent's image (runbooks/agent.yaml): this repository's Node.js (the machine's own binary, with its
# loader and libraries, so the node needs none) and the agent's bundles from dist/, on busybox for nsenter. Built
# from the working tree each time dist/ changes (a test's setup asks for it), cached by that key, and loaded into the
# runtime of the pool or kind nodes named.

agent_image_key() {
  (cd "$TB_ROOT/.." && sha256sum /usr/bin/node dist/agent/main.js dist/agent/unit.js node_modules/ssh2/package.json; declare -f build_agent_image) | sha256sum | cut -c1-12
}

# The image's tag; the image itself in the bed docker and as a tarball in the cache.
build_agent_image() {
  local key tag tar d o lib lock
  key=$(agent_image_key); tag="node-maint/agent:$key"; tar="$TESTBED_CACHE/agent-image-$key.tar"
  # Test files ask for it side by side: one builds, the others wait for its tarball (never half written).
  exec {lock}>"$TESTBED_CACHE/agent-image.lock"
  flock "$lock"
  if [ ! -f "$tar" ]; then
    [ -f "$TB_ROOT/../dist/agent/main.js" ] || { echo "testbed: no dist/agent/main.js: run npm run build first" >&2; return 1; }
    d=$(mktemp -d); o="$d/opt/node-maint"; lib="$o/lib"
    mkdir -p "$o/bin" "$lib" "$o/app/dist/agent" "$o/app/node_modules" "$d/bin" "$d/tmp"
    echo "$key" > "$o/VERSION"
    cp /usr/bin/node "$o/bin/node"
    # Its loader and every library it links, found as the loader finds them here.
    ldd /usr/bin/node | awk '/=> \//{print $3} /^[ \t]*\/lib/{print $1}' | while read -r f; do cp -L "$f" "$lib/"; done
    echo '{"type":"module"}' > "$o/app/package.json"
    cp "$TB_ROOT/../dist/agent/main.js" "$TB_ROOT/../dist/agent/unit.js" "$o/app/dist/agent/"
    for m in ssh2 asn1 bcrypt-pbkdf safer-buffer tweetnacl; do cp -r "$TB_ROOT/../node_modules/$m" "$o/app/node_modules/"; done
    cp /bin/busybox "$d/bin/busybox"
    for a in sh nsenter cat ls; do ln -s busybox "$d/bin/$a"; done
    tar -C "$d" -c . | $BED_DOCKER import -c 'ENV PATH=/bin' -c 'ENTRYPOINT ["/opt/node-maint/lib/ld-linux-x86-64.so.2", "--library-path", "/opt/node-maint/lib", "/opt/node-maint/bin/node", "/opt/node-maint/app/dist/agent/main.js"]' - "$tag" >/dev/null
    $BED_DOCKER save "$tag" > "$tar.tmp" && mv "$tar.tmp" "$tar"
    rm -rf "$d"
    # Earlier builds (one per change of dist/, about 110 MB each) are not kept.
    find "$TESTBED_CACHE" -maxdepth 1 -name 'agent-image-*.tar' ! -name "$(basename "$tar")" -delete
  fi
  exec {lock}>&-
  echo "$tag"
}

# Loads the agent's image into a node's runtime (the one its kubelet uses): a pool node, or a kind node by its name.
load_agent_image() { # NODE TAG
  local c="$POOL_PREFIX$1" tar
  tar="$TESTBED_CACHE/agent-image-${2##*:}.tar"
  if [ -n "$($BED_DOCKER inspect -f '{{index .Config.Labels "io.x-k8s.kind.cluster"}}' "$1" 2>/dev/null)" ]; then
    $BED_DOCKER exec -i "$1" ctr -n k8s.io images import - < "$tar" >/dev/null
  elif $BED_DOCKER exec "$c" sh -c 'command -v dockerd' >/dev/null; then
    $BED_DOCKER exec -i "$c" docker load -q < "$tar" >/dev/null
  else
    $BED_DOCKER exec -i "$c" ctr -n k8s.io images import - < "$tar" >/dev/null
  fi
}
