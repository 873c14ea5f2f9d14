#!/usr/bin/env bash
# Side-by-side benchmark against ../shared/bench/peers (the peers' own harness and rules).
#
#   bash crates/wright-sandbox/bench/peers.sh [REPS]     # from the workspace root
#
# 1. `sandbox_run` (what `wright sandbox run FILE --repeat N --json` does: warm worker pool,
#    fresh context per call) on the workload files as they are, N=200 after 10 warm-up runs,
#    REPS times, interleaved with 2.
# 2. The peers' run.sh with our subprocess peer (`examples/peer`, one process per run, like
#    node/bun) added through PEERS_EXTRA, plus an enforcement-only pass with a deadline short
#    enough for E1 (the harness SIGKILLs at 100 ms).
# Needs a release build: cargo build --release -p wright-sandbox --bins --examples
set -euo pipefail
REPS="${1:-2}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/release"
PEERS="${PEERS_DIR:-$ROOT/../shared/bench/peers}"
W="$PEERS/workloads"
for rep in $(seq 1 "$REPS"); do
  for w in w1 w2 w3; do
    input=()
    [ -f "$W/$w-input.json" ] && input=(--input "$W/$w-input.json")
    printf '{"rep":%s,"workload":"%s","report":%s}\n' "$rep" "$w" \
      "$("$TARGET/examples/sandbox_run" "$W/$w.js" "${input[@]}" --repeat 200 --warmup 10 --json)"
  done
done
PEERS_EXTRA="wright-proc=$TARGET/examples/peer" bash "$PEERS/run.sh" --reps="$REPS" \
  --peers=ivm-cold,ivm-warm,qjs-cold,qjs-warm,node,bun,wright-proc
PEERS_EXTRA="wright-proc-e=$TARGET/examples/peer --deadline-ms 80" bash "$PEERS/run.sh" --no-bench --peers=wright-proc-e
