#!/usr/bin/env bash
# Builds the command-line tools the e2e suite runs, from Go modules pinned in
# this folder, into a cache folder outside the clone. One tool set per call:
#
#   build.sh [kube]   kube-apiserver, kubectl (tools/go.mod) and etcd (tools/etcd)
#   build.sh helm     helm (tools-helm/go.mod)
#   build.sh promtool promtool (tools-promtool/go.mod)
#   build.sh node     kubelet, kube-scheduler and pause (tools-node/go.mod, the Kubernetes pin of tools/)
#   build.sh containerd  containerd, ctr and containerd-shim-runc-v2 (tools-containerd/go.mod)
#   build.sh all      every set at once, one line each: "<set> <bin dir>"
#
# A set lands in ${SANDBOX_INJECTOR_CACHE:-$HOME/.cache/sandbox-injector}/<set>-<versions>-<hash>/bin/.
# <hash> is a short digest of the set's go.mod, go.sum, sources and the build
# recipe below, so any change to the pins or flags gets a fresh folder. A folder
# that exists is complete: the build writes into a temporary folder next to it
# and renames it into place only once every binary is there.
#
# Progress goes to stderr; stdout carries exactly one line, the bin folder
# (for `all`, one line per set).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool_set="${1:-kube}"

log() { printf 'build.sh %s: %s\n' "$tool_set" "$*" >&2; }

command -v go >/dev/null 2>&1 || {
  if [[ -x /usr/local/go/bin/go ]]; then
    PATH="/usr/local/go/bin:$PATH"
  else
    log "go not found on PATH (needs Go >= 1.26)"
    exit 1
  fi
}

all_sets=(kube helm promtool node containerd)
if [[ "$tool_set" == all ]]; then
  # The sets share nothing but the module cache, which Go locks itself; their
  # downloads overlap each other's compiles.
  declare -A outputs=()
  pids=()
  for set in "${all_sets[@]}"; do
    outputs[$set]="$(mktemp)"
    bash "${BASH_SOURCE[0]}" "$set" >"${outputs[$set]}" &
    pids+=($!)
  done
  status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  for set in "${all_sets[@]}"; do
    [[ -s "${outputs[$set]}" ]] && printf '%s %s\n' "$set" "$(cat "${outputs[$set]}")"
    rm -f "${outputs[$set]}"
  done
  exit "$status"
fi

# Keep the build independent of whatever the caller has set.
export GOWORK=off
export CGO_ENABLED=0
export GOFLAGS=-mod=readonly

# A pinned version, read from the require block of a set's go.mod.
mod_version() {
  awk -v mod="$2" '
    $1 == "require" && $2 == mod { print $3; exit }
    $1 == mod && $2 ~ /^v/ { print $2; exit }
  ' "$1/go.mod"
}

# Stamps the Kubernetes version the way its release build does, so that `kubectl version`, the apiserver's
# /version and the node's kubelet version report v1.x.y.
kube_version_ldflags() {
  local pkg flags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$1 -X $pkg.gitMajor=1 -X $pkg.gitMinor=$2 -X $pkg.gitTreeState=clean"
  done
  printf '%s' "$flags"
}

# Build tags: one `go build` per entry of `steps` ("<tags>|<packages>"); most sets have one step without tags.
steps=()

case "$tool_set" in
  kube)
    tools_dir="$script_dir/tools"
    k8s_version="$(mod_version "$tools_dir" k8s.io/kubernetes)"
    etcd_version="$(mod_version "$tools_dir" go.etcd.io/etcd/server/v3)"
    if [[ ! "$k8s_version" =~ ^v1\.([0-9]+)\.[0-9]+$ || ! "$etcd_version" =~ ^v3\.[0-9]+\.[0-9]+$ ]]; then
      log "could not read pinned versions from $tools_dir/go.mod (k8s='$k8s_version' etcd='$etcd_version')"
      exit 1
    fi
    k8s_minor="$(cut -d. -f2 <<<"${k8s_version#v}")"
    ldflags="-s -w$(kube_version_ldflags "$k8s_version" "$k8s_minor")"
    packages=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./etcd)
    binaries=(kube-apiserver kubectl etcd)
    sources=("$tools_dir/etcd/main.go")
    folder="kube-$k8s_version-etcd-$etcd_version"
    ;;
  helm)
    tools_dir="$script_dir/tools-helm"
    helm_version="$(mod_version "$tools_dir" helm.sh/helm/v3)"
    [[ "$helm_version" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { log "could not read the helm pin from $tools_dir/go.mod"; exit 1; }
    # `helm version` reports the pin, and `helm template`/`helm lint` assume the Kubernetes minor of the
    # client-go helm is built with (not v1.20), as a release build of helm does.
    client_go="$(mod_version "$tools_dir" k8s.io/client-go)"
    [[ "$client_go" =~ ^v0\.([0-9]+)\.[0-9]+$ ]] || { log "could not read k8s.io/client-go from $tools_dir/go.mod"; exit 1; }
    k8s_minor="${BASH_REMATCH[1]}"
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
    for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
    done
    packages=(helm.sh/helm/v3/cmd/helm)
    binaries=(helm)
    sources=("$tools_dir/tools.go")
    folder="helm-$helm_version"
    ;;
  promtool)
    tools_dir="$script_dir/tools-promtool"
    prometheus_version="$(mod_version "$tools_dir" github.com/prometheus/prometheus)"
    [[ "$prometheus_version" =~ ^v0\.[0-9]+\.[0-9]+$ ]] || { log "could not read the prometheus pin from $tools_dir/go.mod"; exit 1; }
    ldflags="-s -w -X github.com/prometheus/common/version.Version=$prometheus_version"
    packages=(github.com/prometheus/prometheus/cmd/promtool)
    binaries=(promtool)
    sources=("$tools_dir/tools.go")
    folder="promtool-$prometheus_version"
    ;;
  node)
    tools_dir="$script_dir/tools-node"
    k8s_version="$(mod_version "$tools_dir" k8s.io/kubernetes)"
    [[ "$k8s_version" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { log "could not read k8s.io/kubernetes from $tools_dir/go.mod"; exit 1; }
    ldflags="-s -w$(kube_version_ldflags "$k8s_version" "${BASH_REMATCH[1]}")"
    packages=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler ./pause)
    binaries=(kubelet kube-scheduler pause)
    sources=("$tools_dir/pause/main.go")
    folder="node-$k8s_version"
    ;;
  containerd)
    tools_dir="$script_dir/tools-containerd"
    containerd_version="$(mod_version "$tools_dir" github.com/containerd/containerd/v2)"
    [[ "$containerd_version" =~ ^v2\.[0-9]+\.[0-9]+$ ]] || { log "could not read the containerd pin from $tools_dir/go.mod"; exit 1; }
    ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version"
    # containerd's static release tags: no snapshotters this node does not use, no cgo; the shim also
    # leaves out gRPC, as containerd's own Makefile builds it.
    static_tags="no_btrfs,no_devmapper,no_zfs,osusergo,netgo,static_build,urfave_cli_no_docs"
    steps=(
      "$static_tags|github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr"
      "$static_tags,no_grpc|github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
    )
    packages=(github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr
      github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)
    binaries=(containerd ctr containerd-shim-runc-v2)
    sources=()
    folder="containerd-$containerd_version"
    ;;
  *)
    log "unknown tool set (${all_sets[*]} or all)"
    exit 2
    ;;
esac

recipe_hash="$(
  {
    cat "$tools_dir/go.mod" "$tools_dir/go.sum" ${sources[@]+"${sources[@]}"}
    printf '%s\n' "$ldflags" "${packages[@]}" "CGO_ENABLED=$CGO_ENABLED" "-trimpath"
    # Only sets with build tags add a line, so the other sets keep their cache folders.
    [[ ${#steps[@]} -eq 0 ]] || printf '%s\n' "${steps[@]}"
  } | sha256sum | cut -c1-10
)"

cache_root="${SANDBOX_INJECTOR_CACHE:-${HOME:-/root}/.cache/sandbox-injector}"
final_dir="$cache_root/$folder-$recipe_hash"
bin_dir="$final_dir/bin"

complete() {
  local b
  for b in "${binaries[@]}"; do
    [[ -x "$bin_dir/$b" ]] || return 1
  done
}

mkdir -p "$cache_root"

if ! complete; then
  # One build of a set at a time per cache root; a second caller waits, then finds the
  # finished folder.
  exec 9>"$cache_root/.build-$tool_set.lock"
  flock 9
  if ! complete; then
    # Leftovers of builds that were killed outright; none is running now.
    rm -rf "$cache_root"/.tmp-"$tool_set"-*
    if [[ -e "$final_dir" ]]; then
      log "removing incomplete $final_dir"
      rm -rf "$final_dir"
    fi
    tmp_dir="$(mktemp -d "$cache_root/.tmp-$tool_set-XXXXXX")"
    trap 'rm -rf "$tmp_dir"' EXIT
    log "building ${binaries[*]} ($folder) with $(go version | cut -d' ' -f3)"
    log "into $final_dir (first build takes a long while; later runs reuse it)"
    start=$SECONDS
    [[ ${#steps[@]} -gt 0 ]] || steps=("|${packages[*]}")
    for step in "${steps[@]}"; do
      read -r -a step_packages <<<"${step#*|}"
      (
        cd "$tools_dir"
        go build -trimpath -buildvcs=false -tags "${step%%|*}" -ldflags "$ldflags" -o "$tmp_dir/bin/" "${step_packages[@]}"
      )
    done
    for b in "${binaries[@]}"; do
      [[ -x "$tmp_dir/bin/$b" ]] || { log "build produced no $b"; exit 1; }
    done
    {
      echo "set=$folder"
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
