# pier's container image: `docker build -t pier:dev .` (docker-compose.yaml builds it as pier:dev). One
# image for every role: `pier serve`, the init steps (`pier certs`, `pier bootstrap --out`) and the demo
# upstreams (`pier upstream`, in the default `demo` feature).

# Build stage: the official Rust image at the toolchain pier is tested with, on Debian 12 (bookworm)
# because the runtime below is Debian 12: a binary linked against a newer glibc would not start there.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin pier \
 && cp target/release/pier /pier \
 && mkdir -p /state

# Runtime: distroless `cc` has what pier links (glibc, libgcc_s; `ldd target/release/pier`) and nothing
# else: no shell, no package manager. `:nonroot` runs as user 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /pier /usr/local/bin/pier
# An empty directory the nonroot user owns: Docker gives a new named volume mounted here the mount
# point's owner, so `pier certs` and `pier bootstrap --out` can write into it (docker-compose.yaml).
COPY --from=build --chown=65532:65532 /state /var/lib/pier
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pier"]
