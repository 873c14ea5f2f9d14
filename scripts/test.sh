#!/usr/bin/env bash
# Runs every test of the repository: the Rust workspace (unit, integration, end-to-end).
# Needs only the Rust toolchain; tests read shared fixtures from ../shared when present.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
