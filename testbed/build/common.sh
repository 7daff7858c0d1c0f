# Shared settings for the Go builds of the bed's third-party binaries: one cache outside the repo, keyed by version.
TESTBED_CACHE=${TESTBED_CACHE:-/var/cache/node-maint-testbed}
# Pinned versions, one place. Kubernetes v1.32.5: the newest 1.32 patch whose staging modules the proxy serves in full.
K8S_VERSION=${K8S_VERSION:-v1.32.5}
CRI_DOCKERD_VERSION=${CRI_DOCKERD_VERSION:-v0.4.3}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
PULUMI_VERSION=${PULUMI_VERSION:-v3.248.0}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.30.0}
ETCD_VERSION=${ETCD_VERSION:-v3.5.21}
export GOMODCACHE="$TESTBED_CACHE/go/mod" GOCACHE="$TESTBED_CACHE/go/build"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
PATH=/usr/local/go/bin:$PATH

log() { printf '[testbed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# A wrapper module in a scratch dir; the caller writes go.mod and main package paths.
wrapper_dir() { local d="$TESTBED_CACHE/wrappers/$1"; mkdir -p "$d"; echo "$d"; }

# done_marker DIR: present once every binary of a build landed.
built() { [ -f "$1/.complete" ]; }

# One build of a name at a time: a second `up` waits for the first instead of racing it into the same directory.
lock_build() { mkdir -p "$TESTBED_CACHE"; exec 9>"$TESTBED_CACHE/.build-$1.lock"; flock 9; }
