# Shared settings for the Go builds of the bed's third-party binaries: one cache outside the repo, keyed by version.
TESTBED_CACHE=${TESTBED_CACHE:-/var/cache/node-maint-testbed}
# Pinned versions, one place. Kubernetes v1.32.5: the newest 1.32 patch whose staging modules the proxy serves in full.
K8S_VERSION=${K8S_VERSION:-v1.32.5}
CRI_DOCKERD_VERSION=${CRI_DOCKERD_VERSION:-v0.4.3}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
PULUMI_VERSION=${PULUMI_VERSION:-v3.248.0}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.30.0}
ETCD_VERSION=${ETCD_VERSION:-v3.5.21}
KIND_VERSION=${KIND_VERSION:-v0.33.0}
CNITOOL_VERSION=${CNITOOL_VERSION:-v1.1.2}
WHEREABOUTS_VERSION=${WHEREABOUTS_VERSION:-v0.9.2}
# Calico 3.28: the one pseudo-version of the calico monorepo the proxy serves (a commit on release-v3.28); its api
# module, which the proxy refuses, from the third-party source the project keeps beside the repository.
CALICO_VERSION=${CALICO_VERSION:-v1.11.0-cni-plugin.0.20250813170300-a0db560f0520}
CALICO_API_TARBALL=${CALICO_API_TARBALL:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared/third-party/calico-api-a0db560f0520.tar.gz}
[ -f "$CALICO_API_TARBALL" ] || CALICO_API_TARBALL=/work/shared/third-party/calico-api-a0db560f0520.tar.gz
# @pulumi/kubernetes (package.json pins the same) and the provider module's one served pseudo-version, its v4.25.0.
PULUMI_KUBERNETES_VERSION=${PULUMI_KUBERNETES_VERSION:-4.25.0}
PULUMI_KUBERNETES_PROVIDER_MODULE=${PULUMI_KUBERNETES_PROVIDER_MODULE:-v4.0.0-20260115033456-f47bc2d6f199}
export GOMODCACHE="$TESTBED_CACHE/go/mod" GOCACHE="$TESTBED_CACHE/go/build"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
PATH=/usr/local/go/bin:$PATH

log() { printf '[testbed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# download_modules MODULE@VERSION...: into the module cache only, for files a module ships (kind's node files,
# whereabouts' CRDs) where its binary is not needed.
download_modules() { (cd "$TESTBED_CACHE" && go mod download "$@"); }

# A wrapper module in a scratch dir; the caller writes go.mod and main package paths.
wrapper_dir() { local d="$TESTBED_CACHE/wrappers/$1"; mkdir -p "$d"; echo "$d"; }

# enter_wrapper NAME MODULE VERSION PACKAGE: cd into a wrapper module that requires MODULE at VERSION with the
# upstream's own replace directives (go install refuses a module that has any), importing PACKAGE for tidy.
enter_wrapper() {
  local upstream_mod; cd "$(wrapper_dir "$1")"
  upstream_mod=$(go mod download -json "$2@$3" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module testbed/$1"; echo
    grep -m1 '^go ' "$upstream_mod"; echo
    echo "require $2 $3"; echo
    grep -E '^replace [^(]' "$upstream_mod" || true
    sed -n '/^replace (/,/^)/p' "$upstream_mod"
  } > go.mod
  printf 'package tools\n\nimport _ "%s"\n' "$4" > tools.go
  go mod tidy >/dev/null 2>&1 || true
}

# begin_build NAME-VERSION: sets $out (binaries go to $out.tmp), holds the name's build lock so a second `up` waits
# instead of racing into the same directory, and ends the script at once when that build is already cached.
begin_build() {
  out="$TESTBED_CACHE/bin/$1"
  mkdir -p "$TESTBED_CACHE"; exec 9>"$TESTBED_CACHE/.build-$1.lock"; flock 9
  if [ -f "$out/.complete" ]; then echo "$out"; exit 0; fi
}

# finish_build: $out.tmp becomes the cached build in one move, marked complete.
finish_build() { touch "$out.tmp/.complete"; rm -rf "$out"; mv "$out.tmp" "$out"; echo "$out"; }

# The version stamps of a Kubernetes build (run in the Kubernetes wrapper module), as the upstream Makefile sets them.
k8s_ldflags() {
  local minor=${K8S_VERSION#v1.} commit ld="" pkg
  minor=${minor%%.*}
  commit=$(go mod download -json k8s.io/kubernetes | sed -n 's/.*"Hash": "\(.*\)".*/\1/p' | head -1)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitCommit=${commit:-unknown} -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  echo "$ld"
}
