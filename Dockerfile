# kache's container image: the `kache` binary on a distroless base, running
# as the non-root user 65532 the manifests in config/deploy/ ask for.
#
#   docker build -t ghcr.io/kache-dev/kache:0.1.0 .
#
# The binary is built without the `sim` feature: the simulator (`kache demo`,
# `kache sim`) is for trying kache and for its tests, and has no place in a
# production image.

FROM rust:1.89-bookworm AS build
WORKDIR /src
COPY . .
# No debug info, symbols stripped: a smaller image (the repository's release
# profile keeps debug info for profiling).
ENV CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols
RUN cargo build --release --locked -p kache --bin kache --no-default-features \
 && cp target/release/kache /kache

# glibc (kache sets MALLOC_ARENA_MAX through it), CA certificates, no shell.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /kache /usr/local/bin/kache
USER 65532:65532
EXPOSE 8001 8443 8081
ENTRYPOINT ["/usr/local/bin/kache"]
CMD ["serve", "--help"]
