#!/usr/bin/env bash
# kache's container image, built here without a registry: the release
# binary on an empty root (config/image/rootfs.sh says what is in it),
# written as an OCI archive.
#
#   config/image/build.sh                    # -> target/image/kache.oci.tar
#   config/image/build.sh --binary PATH      # an image of another kache build (the tests')
#   config/image/build.sh --output FILE
#
# Needs buildah (Debian: `apt-get install buildah`), run as root: it builds
# `FROM scratch` with the vfs storage driver in a private store under
# target/image/, which it removes when done. Load the archive into a
# registry or a node with `skopeo copy oci-archive:target/image/kache.oci.tar
# docker://REGISTRY/kache:VERSION` (or `podman load -i`), and run it with
# `buildah from oci-archive:…` then `buildah run --isolation chroot`.
#
# The image is the Dockerfile's (which runs the same rootfs.sh): entrypoint
# /usr/local/bin/kache, user 65532, the OCI labels below; its version is
# Cargo.toml's, its revision the checkout's commit (KACHE_COMMIT overrides
# both the label and what `kache --version` prints), its creation time the
# commit's, so that the same commit builds the same layers.
set -euo pipefail
cd "$(dirname "$0")/../.."

binary=
output=target/image/kache.oci.tar
while (($#)); do
  case $1 in
    --binary) binary=${2:?--binary PATH}; shift 2 ;;
    --output) output=${2:?--output FILE}; shift 2 ;;
    *) echo "usage: $0 [--binary PATH] [--output FILE]" >&2; exit 2 ;;
  esac
done

version=$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
source=$(sed -n '/^\[package\]/,/^\[/s/^repository = "\(.*\)"/\1/p' Cargo.toml)
commit=${KACHE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

if [[ -z $binary ]]; then
  # The `dist` profile: release, without debug info or symbols. No `sim`
  # feature: `kache demo` and `kache sim` are for trying kache, not for production.
  nice -n 10 cargo build --profile dist --locked -p kache --bin kache --no-default-features
  binary=target/dist/kache
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kache-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
config/image/rootfs.sh "$binary" "$work/root"

mkdir -p "$(dirname "$output")"
buildah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
container=$("${buildah[@]}" from scratch)
"${buildah[@]}" copy --quiet "$container" "$work/root/" /
"${buildah[@]}" config \
  --entrypoint '["/usr/local/bin/kache"]' \
  --cmd '["serve", "--help"]' \
  --user 65532:65532 \
  --workingdir / \
  --port 8001 --port 8443 --port 8081 \
  --label org.opencontainers.image.title=kache \
  --label "org.opencontainers.image.description=A Kubernetes API watch cache and list proxy" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$commit" \
  --label "org.opencontainers.image.source=$source" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label "org.opencontainers.image.created=$(date -u -d "@$created" +%Y-%m-%dT%H:%M:%SZ)" \
  "$container"
rm -f "$output"
"${buildah[@]}" commit --quiet --rm --format oci --identity-label=false --timestamp "$created" \
  --disable-compression=false "$container" "oci-archive:$output:ghcr.io/kache-dev/kache:$version" > /dev/null
echo "$output: kache $version ($commit), $(du -k "$output" | cut -f1) KiB"
