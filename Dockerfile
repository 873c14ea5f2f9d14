# syntax=docker/dockerfile:1
#
# Wright in a container: the canvas app built with Node, the `wright` binary built with the
# Rust toolchain, and a slim Debian runtime with Chromium for the browser tools.
#
#   docker build -t wright .
#   docker run -p 8080:8080 -e WRIGHT_TOKEN=... -v wright-data:/data wright
#
# Or `docker compose up` with the top-level docker-compose.yml. No image was built on the
# machines this was written on (no container runtime there): see the README's Deployment
# section for what was and was not run.

# --- the canvas app --------------------------------------------------------------------
FROM node:20-bookworm-slim AS frontend
WORKDIR /src/frontend
# Dependencies first, so a source change does not reinstall them.
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

# --- the binary ----------------------------------------------------------------------------
# The toolchain the workspace declares (rust-version = "1.95"); Debian 12 like the runtime, so
# the binary links the same glibc.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock rustfmt.toml ./
COPY crates crates
# Compiled into the binary (include_str!): the app database's migrations and the sandbox's
# JavaScript prelude.
COPY migrations migrations
COPY sandbox-prelude sandbox-prelude
# And the built canvas, gzip-compressed by crates/wright-server/build.rs: the binary serves it.
COPY --from=frontend /src/frontend/dist frontend/dist
# The release profile keeps line tables (for profiling); they go to wright.debug beside the
# binary, which ships stripped and names that file (`.gnu_debuglink`) for perf and gdb. Get it
# with `docker build --target debug-info --output type=local,dest=. .`
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin wright \
 && cp target/release/wright /usr/local/bin/wright \
 && cd /usr/local/bin \
 && objcopy --only-keep-debug wright wright.debug \
 && objcopy --strip-debug --add-gnu-debuglink=wright.debug wright

# --- the debug info, for profiling a shipped binary (not part of the runtime image) --------
FROM scratch AS debug-info
COPY --from=build /usr/local/bin/wright.debug /wright.debug

# --- the runtime ---------------------------------------------------------------------------
FROM debian:bookworm-slim AS runtime
# Debian's chromium for the browser tools (Wright launches it with --no-sandbox and sends all
# its traffic through the egress proxy); bubblewrap, which confines the `bash` tool (without it
# bash is off — `wright serve` says so at start; it needs unprivileged user namespaces, which
# Docker's default seccomp profile may refuse: then run with a profile that allows them);
# CA certificates for HTTPS; tini reaps Chromium's, bubblewrap's and the sandbox workers'
# children and forwards SIGTERM so shutdown is graceful.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium bubblewrap ca-certificates fonts-liberation tini \
 && rm -rf /var/lib/apt/lists/*
# An unprivileged user owns the data; nothing in the image runs as root.
RUN useradd --system --uid 10001 --create-home --home-dir /home/wright wright \
 && mkdir /data && chown wright:wright /data
COPY --from=build /usr/local/bin/wright /usr/local/bin/wright
WORKDIR /app
USER wright
ENV WRIGHT_DATA_DIR=/data \
    RUST_LOG=info,sqlx=warn
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/wright"]
# Inside the container Wright must listen on all interfaces; publish the port on the host's
# loopback only unless a TLS reverse proxy is in front (see docker-compose.yml).
CMD ["serve", "--bind", "0.0.0.0:8080"]
