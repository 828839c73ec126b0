#!/usr/bin/env bash
# Installs what the image e2e test runs, with apt-get, when it is missing: buildah (builds the Dockerfile),
# mmdebstrap (the stand-in bases' Debian root filesystem) and runc (runs the image's containers; Debian's crun
# 1.8 refuses hosts with hybrid cgroups, runc does not). As root, or through `sudo -n`.
set -euo pipefail

log() { printf 'install-tools.sh: %s\n' "$*" >&2; }
as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo -n "$@"; fi
}

missing=()
for tool in buildah mmdebstrap runc; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
[[ "${#missing[@]}" -eq 0 ]] && exit 0
log "installing ${missing[*]} with apt-get"
start=$SECONDS
as_root apt-get update -qq >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
log "installed in $((SECONDS - start))s"
