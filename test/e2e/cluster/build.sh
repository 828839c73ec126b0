#!/usr/bin/env bash
# Builds the binaries of the e2e test cluster (kube-apiserver, kubectl, etcd)
# from the Go modules pinned in test/e2e/cluster/tools/go.mod, into a cache
# folder outside the clone:
#
#   ${SANDBOX_INJECTOR_CACHE:-$HOME/.cache/sandbox-injector}/kube-<k8s>-etcd-<etcd>-<hash>/bin/
#
# <hash> is a short digest of tools/go.mod, tools/go.sum, the etcd wrapper and
# the build recipe below, so any change to the pins or flags gets a fresh
# folder. A folder that exists is complete: the build writes into a temporary
# folder next to it and renames it into place only once every binary is there.
#
# Progress goes to stderr; stdout carries exactly one line, the bin folder.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools_dir="$script_dir/tools"

log() { printf 'build.sh: %s\n' "$*" >&2; }

command -v go >/dev/null 2>&1 || {
  if [[ -x /usr/local/go/bin/go ]]; then
    PATH="/usr/local/go/bin:$PATH"
  else
    log "go not found on PATH (needs Go >= 1.26)"
    exit 1
  fi
}

# Keep the build independent of whatever the caller has set.
export GOWORK=off
export CGO_ENABLED=0
export GOFLAGS=-mod=readonly

# The pinned versions, read from the module's require block.
mod_version() {
  awk -v mod="$1" '
    $1 == "require" && $2 == mod { print $3; exit }
    $1 == mod && $2 ~ /^v/ { print $2; exit }
  ' "$tools_dir/go.mod"
}
k8s_version="$(mod_version k8s.io/kubernetes)"
etcd_version="$(mod_version go.etcd.io/etcd/server/v3)"
if [[ ! "$k8s_version" =~ ^v1\.([0-9]+)\.[0-9]+$ || ! "$etcd_version" =~ ^v3\.[0-9]+\.[0-9]+$ ]]; then
  log "could not read pinned versions from $tools_dir/go.mod (k8s='$k8s_version' etcd='$etcd_version')"
  exit 1
fi
k8s_minor="$(cut -d. -f2 <<<"${k8s_version#v}")"

# Stamp the Kubernetes version the way its release build does, so that
# `kubectl version` and the apiserver's /version report v1.x.y.
version_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  version_ldflags+=" -X $pkg.gitVersion=$k8s_version"
  version_ldflags+=" -X $pkg.gitMajor=1"
  version_ldflags+=" -X $pkg.gitMinor=$k8s_minor"
  version_ldflags+=" -X $pkg.gitTreeState=clean"
done
ldflags="-s -w$version_ldflags"
packages=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./etcd)
binaries=(kube-apiserver kubectl etcd)

recipe_hash="$(
  {
    cat "$tools_dir/go.mod" "$tools_dir/go.sum" "$tools_dir/etcd/main.go"
    printf '%s\n' "$ldflags" "${packages[@]}" "CGO_ENABLED=$CGO_ENABLED" "-trimpath"
  } | sha256sum | cut -c1-10
)"

cache_root="${SANDBOX_INJECTOR_CACHE:-${HOME:-/root}/.cache/sandbox-injector}"
final_dir="$cache_root/kube-$k8s_version-etcd-$etcd_version-$recipe_hash"
bin_dir="$final_dir/bin"

complete() {
  local b
  for b in "${binaries[@]}"; do
    [[ -x "$bin_dir/$b" ]] || return 1
  done
}

mkdir -p "$cache_root"

if ! complete; then
  # One build at a time per cache root; a second caller waits, then finds the
  # finished folder.
  exec 9>"$cache_root/.build.lock"
  flock 9
  if ! complete; then
    # Leftovers of builds that were killed outright; none is running now.
    rm -rf "$cache_root"/.tmp-kube-*
    if [[ -e "$final_dir" ]]; then
      log "removing incomplete $final_dir"
      rm -rf "$final_dir"
    fi
    tmp_dir="$(mktemp -d "$cache_root/.tmp-kube-$k8s_version-XXXXXX")"
    trap 'rm -rf "$tmp_dir"' EXIT
    log "building kube-apiserver, kubectl ($k8s_version) and etcd ($etcd_version) with $(go version | cut -d' ' -f3)"
    log "into $final_dir (first build takes a long while; later runs reuse it)"
    start=$SECONDS
    (
      cd "$tools_dir"
      go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp_dir/bin/" "${packages[@]}"
    )
    for b in "${binaries[@]}"; do
      [[ -x "$tmp_dir/bin/$b" ]] || { log "build produced no $b"; exit 1; }
    done
    {
      echo "kubernetes=$k8s_version"
      echo "etcd=$etcd_version"
      echo "go=$(go env GOVERSION)"
      echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
      echo "seconds=$((SECONDS - start))"
    } >"$tmp_dir/BUILD_INFO"
    # rename(2) of a directory is atomic on one filesystem: the folder appears
    # complete or not at all.
    chmod 755 "$tmp_dir"
    mv -T "$tmp_dir" "$final_dir"
    trap - EXIT
    log "built in $((SECONDS - start))s"
  fi
  flock -u 9
fi

printf '%s\n' "$bin_dir"
