# Shared settings for the Go builds of the bed's third-party binaries: one cache outside the repo, keyed by version.
TESTBED_CACHE=${TESTBED_CACHE:-/var/cache/node-maint-testbed}
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
