# kache's container image for a registry's build service: the same image as
# config/image/build.sh builds here without one (the same `dist` binary, the
# same root from config/image/rootfs.sh, the same labels), `FROM scratch`:
# the kache binary, the glibc libraries it links, CA roots, the non-root
# user 65532 the manifests in config/deploy/ and charts/kache run it as,
# and no shell.
#
#   docker build --build-arg KACHE_COMMIT=$(git rev-parse HEAD) -t ghcr.io/kache-dev/kache:0.1.0 .
#
# .git is not sent to the builder (.dockerignore): KACHE_COMMIT names the
# commit for `kache --version` and the revision label. KACHE_VERSION must be
# Cargo.toml's version (`cargo test --test release` checks its default).
#
# The binary is built without the `sim` feature: the simulator (`kache demo`,
# `kache sim`) is for trying kache and for its tests, and has no place in a
# production image.

FROM rust:1.89-bookworm AS build
ARG KACHE_COMMIT=unknown
WORKDIR /src
COPY . .
RUN KACHE_COMMIT=$KACHE_COMMIT cargo build --profile dist --locked -p kache --bin kache --no-default-features \
 && config/image/rootfs.sh target/dist/kache /rootfs

FROM scratch
ARG KACHE_VERSION=0.1.0
ARG KACHE_COMMIT=unknown
COPY --from=build /rootfs /
USER 65532:65532
EXPOSE 8001 8443 8081
LABEL org.opencontainers.image.title=kache \
      org.opencontainers.image.description="A Kubernetes API watch cache and list proxy" \
      org.opencontainers.image.version=$KACHE_VERSION \
      org.opencontainers.image.revision=$KACHE_COMMIT \
      org.opencontainers.image.source=https://github.com/kache-dev/kache \
      org.opencontainers.image.licenses=Apache-2.0
ENTRYPOINT ["/usr/local/bin/kache"]
CMD ["serve", "--help"]
