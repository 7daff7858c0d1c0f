# Debian packages the bed needs on this machine, and a local apt repository of the runtime versions for the fleet hosts.
HOST_PACKAGES="docker.io runc containernetworking-plugins openssh-server openssh-client sudo debootstrap
busybox-static iproute2 iptables openssl conntrack ebtables ethtool socat util-linux kmod procps psmisc jq gcc libc6-dev
dpkg-dev"

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

# The .debs of both containerd versions (and what they need), served to the fleet hosts as a file: apt source.
build_local_apt_repo() {
  local repo="$TESTBED_CACHE/apt-repo-${CONTAINERD_OLD//[~+]/_}-${CONTAINERD_NEW//[~+]/_}"
  if [ ! -f "$repo/Packages" ]; then
    log "building the fleet's local apt repository"
    mkdir -p "$repo.tmp" && cd "$repo.tmp"
    apt-get download -qq "containerd=$CONTAINERD_OLD" "containerd=$CONTAINERD_NEW" runc >/dev/null
    dpkg-scanpackages --multiversion . /dev/null > Packages 2>/dev/null
    cd - >/dev/null; rm -rf "$repo"; mv "$repo.tmp" "$repo"
  fi
  LOCAL_APT_REPO=$repo
}
