# Debian packages the bed needs on this machine, and a local apt repository of the runtime versions for the nodes.
# docker.io, runc and containerd: the binaries of the bed's own dockerd (copied); busybox and gcc: the pods' images;
# acct: the suite's CPU by command (process accounting, test/integration/global-setup.ts).
HOST_PACKAGES="docker.io runc openssh-client debootstrap busybox-static iproute2 iptables openssl socat util-linux kmod
procps psmisc jq gcc libc6-dev dpkg-dev curl prometheus prometheus-node-exporter acct"

install_host_packages() {
  local missing=()
  for p in $HOST_PACKAGES; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
  local want_containerd=1
  dpkg-query -W -f='${Status}' containerd 2>/dev/null | grep -q 'ok installed' && want_containerd=0
  [ ${#missing[@]} -eq 0 ] && [ $want_containerd -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]} $([ $want_containerd = 1 ] && echo "containerd=$CONTAINERD_OLD")"
  # Daemons are the bed's to start: keep apt's maintainer scripts from starting them.
  ensure_policy_rc_d
  apt-get update -qq
  local pin=(); [ $want_containerd = 1 ] && pin=("containerd=$CONTAINERD_OLD")
  apt-get install -y -qq --no-install-recommends "${missing[@]}" "${pin[@]}" >/dev/null
}

ensure_policy_rc_d() {
  [ -x /usr/sbin/policy-rc.d ] && return 0
  printf '#!/bin/sh\n# node-maint test bed: no daemon starts from a package script.\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  touch "$TB_STATE/created-policy-rc.d"
}

# The .debs of both containerd versions (and what they need), the test versions with fault hooks of containerd and
# docker.io, served to the pool's and kind's nodes as a file: apt source. Keyed by the versions, the hooks and
# the repacking, so a change rebuilds it.
build_local_apt_repo() {
  # SHA256 alone in the index: apt's file method computes each hash the index lists, on every install the suite makes
  # (md5 and sha1 besides were half of its CPU).
  local scan=(dpkg-scanpackages --multiversion --hash sha256)
  local key; key=$(printf '%s\n' "$CONTAINERD_OLD" "$CONTAINERD_NEW" "$CONTAINERD_FAULTY" "$DOCKER_OLD" "$DOCKER_NEW" "$(declare -f repack_with_fault_hooks repack_uncompressed)" "${scan[*]}" \
    | cat - "$TB_ROOT/packages/fault-hooks.sh" | sha256sum | cut -c1-12)
  local repo="$TESTBED_CACHE/apt-repo-$key"
  if [ ! -f "$repo/Packages" ]; then
    log "building the local apt repository"
    rm -rf "$repo.tmp"; mkdir -p "$repo.tmp" && cd "$repo.tmp"
    # As root into a root-owned directory: apt's _apt sandbox user could not write there (and says so).
    apt-get download -qq -o APT::Sandbox::User=root "containerd=$CONTAINERD_OLD" "containerd=$CONTAINERD_NEW" runc "docker.io=$DOCKER_OLD" >/dev/null
    repack_with_fault_hooks "containerd_${CONTAINERD_NEW}_amd64.deb" containerd "$CONTAINERD_FAULTY" "$CONTAINERD_NEW"
    repack_with_fault_hooks "docker.io_${DOCKER_OLD}_amd64.deb" docker.io "$DOCKER_NEW" "$DOCKER_OLD"
    for deb in *.deb; do repack_uncompressed "$deb"; done
    "${scan[@]}" . /dev/null > Packages 2>/dev/null
    cd - >/dev/null; rm -rf "$repo"; mv "$repo.tmp" "$repo"
  fi
  LOCAL_APT_REPO=$repo
}

# Debian's package with another version and the fault hooks at the top of its preinst and postinst, said so in its
# changelog; the binaries are Debian's, untouched.
repack_with_fault_hooks() { # DEB PACKAGE VERSION FROM_VERSION
  local d; d=$(mktemp -d)
  dpkg-deb -R "$1" "$d/pkg"
  sed -i "s/^Version: .*/Version: $3/" "$d/pkg/DEBIAN/control"
  { echo '#!/bin/sh'; echo 'set -e'; cat "$TB_ROOT/packages/fault-hooks.sh"; } > "$d/pkg/DEBIAN/preinst"
  { echo '#!/bin/sh'; echo 'set -e'; cat "$TB_ROOT/packages/fault-hooks.sh"; sed 1,2d "$d/pkg/DEBIAN/postinst"; } > "$d/pkg/DEBIAN/postinst.new"
  mv "$d/pkg/DEBIAN/postinst.new" "$d/pkg/DEBIAN/postinst"; chmod 0755 "$d/pkg/DEBIAN/preinst" "$d/pkg/DEBIAN/postinst"
  local changelog="$d/pkg/usr/share/doc/$2/changelog.Debian.gz"
  { printf '%s (%s) UNRELEASED; urgency=medium\n\n  * node-maint test bed: Debian %s repacked as %s with fault hooks in preinst\n    and postinst (testbed/packages/fault-hooks.sh), off unless a test turns them on.\n    The binaries are Debian'"'"'s, untouched.\n\n -- node-maint test bed <testbed@localhost>  %s\n\n' \
      "$2" "$3" "$4" "$3" "$(date -R -d @0)"; zcat "$changelog"; } | gzip -9n > "$changelog.new"
  mv "$changelog.new" "$changelog"
  (cd "$d/pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$d/pkg/DEBIAN/md5sums"
  dpkg-deb -b -Zgzip "$d/pkg" "${2}_${3}_amd64.deb" >/dev/null
  rm -rf "$d"
}

# The same package, its contents not compressed: the suite installs these hundreds of times, and unpacking xz was a
# tenth of its CPU. dpkg reads either alike.
repack_uncompressed() { # DEB
  local d; d=$(mktemp -d)
  dpkg-deb -R "$1" "$d/pkg" && dpkg-deb -b -Znone "$d/pkg" "$1" >/dev/null
  rm -rf "$d"
}

# The rootfs every node container starts from (kind's nodes and the pool's): bookworm from debootstrap with systemd,
# sshd and the CNI plugins, the local file repository as its only apt source, containerd pinned at the old version
# through it and held (maintainer scripts start nothing while it is built: policy-rc.d, which the images remove).
NODE_ROOTFS_PACKAGES=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,containernetworking-plugins,apt-utils,socat,tini,openssh-server,sudo
# tini: docker.io's one dependency outside the local apt repository.

# Prints the cached tarball of that rootfs, built once per key (one debootstrap for every node image).
node_rootfs_tarball() {
  local key; key=$(printf '%s\n' "$NODE_ROOTFS_PACKAGES" "$CONTAINERD_OLD" "$LOCAL_APT_REPO" "$(declare -f node_rootfs_tarball)" | sha256sum | cut -c1-12)
  local tarball="$TESTBED_CACHE/node-rootfs-$key.tar"
  if [ ! -f "$tarball" ]; then
    log "building the node rootfs with debootstrap (cold: a few minutes)"
    local r; r=$(mktemp -d "$TESTBED_CACHE/node-rootfs.XXXX")
    debootstrap --variant=minbase --include="$NODE_ROOTFS_PACKAGES" bookworm "$r" http://deb.debian.org/debian >"$TB_LOGS/debootstrap.log" 2>&1 \
      || { log "debootstrap failed, see $TB_LOGS/debootstrap.log"; return 1; }
    mkdir -p "$r/srv/debs"; mount --bind "$LOCAL_APT_REPO" "$r/srv/debs"
    echo 'deb [trusted=yes] file:/srv/debs ./' > "$r/etc/apt/sources.list"
    printf '#!/bin/sh\nexit 101\n' > "$r/usr/sbin/policy-rc.d"; chmod +x "$r/usr/sbin/policy-rc.d"
    chroot "$r" apt-get update -qq >/dev/null 2>&1
    chroot "$r" apt-get install -y -qq --no-install-recommends "containerd=$CONTAINERD_OLD" >>"$TB_LOGS/debootstrap.log" 2>&1
    chroot "$r" apt-mark hold containerd >/dev/null
    umount "$r/srv/debs"
    rm -rf "$r/var/cache/apt/archives"/*.deb
    rm -f "$TESTBED_CACHE"/node-rootfs-*.tar
    tar -C "$r" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$r"
  fi
  echo "$tarball"
}
