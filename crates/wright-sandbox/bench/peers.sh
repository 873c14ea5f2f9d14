#!/usr/bin/env bash
# Side-by-side benchmark against ../shared/bench/peers (the peers' own harness and rules), all
# in one run so that the machine's load lands on every number alike:
#
#   bash crates/wright-sandbox/bench/peers.sh [REPS]     # from the workspace root
#
# Per repetition, interleaved:
# 1. Latency: `sandbox_run` (what `wright sandbox run FILE --repeat N --json` does: warm worker
#    pool of 2, fresh context per call) on the workload files as they are, N=400 (w3: 20) after
#    warm-up.
# 2. QuickJS's own time for the same work in this process, nothing of the sandbox around it
#    (`quickjs_work`): the pool's overhead on a workload is its median minus this one.
# 3. Throughput with 2 workers (`sandbox_run --concurrency 2`) and isolated-vm's on 2 processes
#    (`ivm-throughput.js`, the peers' ivm-cold and ivm-warm code paths), w1 and w2.
# Then the peers' run.sh (PEERS, default below) with our subprocess peer (`examples/peer`, one
# process per run, like node/bun) added through PEERS_EXTRA.
# Last, an enforcement-only pass of the subprocess peer. `uptime` is printed between the parts. Results: JSON lines on stdout, then the
# peers' Markdown table.
#
# PEERS, WORKLOADS (default w1,w2,w3) and THROUGHPUT=0 narrow a run, e.g.
#   WORKLOADS=w1 PEERS=ivm-cold,bun THROUGHPUT=0 bash crates/wright-sandbox/bench/peers.sh 3
# Needs a release build: cargo build --release -p wright-sandbox --bins --examples
# and the peers installed (run.sh installs them with npm into PEERS_DIR on first use).
set -euo pipefail
REPS="${1:-2}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/release"
PEERS_DIR="${PEERS_DIR:-$ROOT/../shared/bench/peers}"
PEERS="${PEERS:-ivm-cold,ivm-warm,qjs-cold,qjs-warm,node,bun,wright-proc}"
WORKLOADS="${WORKLOADS:-w1,w2,w3}"
THROUGHPUT="${THROUGHPUT:-1}"
W="$PEERS_DIR/workloads"
load() { printf '{"load":"%s"}\n' "$(uptime | sed 's/.*load average: //')"; }
input_for() { [ -f "$W/$1-input.json" ] && printf '%s\n' --input "$W/$1-input.json" || true; }
load
for rep in $(seq 1 "$REPS"); do
  for w in ${WORKLOADS//,/ }; do
    mapfile -t input < <(input_for "$w")
    n=400; [ "$w" = w3 ] && n=20
    printf '{"rep":%s,"workload":"%s","what":"pool","report":%s}\n' "$rep" "$w" \
      "$("$TARGET/examples/sandbox_run" "$W/$w.js" "${input[@]}" --repeat "$n" --warmup 20 --json)"
    printf '{"rep":%s,"workload":"%s","what":"quickjs-own","report":%s}\n' "$rep" "$w" \
      "$("$TARGET/examples/quickjs_work" "$W/$w.js" "${input[@]}" --repeat "$n" --warmup 10 | sed 's/,"result_json":.*}$/}/')"
  done
  for w in ${WORKLOADS//,/ }; do
    [ "$THROUGHPUT" = 1 ] && [ "$w" != w3 ] || continue
    mapfile -t input < <(input_for "$w")
    printf '{"rep":%s,"workload":"%s","what":"throughput-2-workers","report":%s}\n' "$rep" "$w" \
      "$("$TARGET/examples/sandbox_run" "$W/$w.js" "${input[@]}" --repeat 10000 --warmup 50 --concurrency 2)"
    for mode in cold warm; do
      printf '{"rep":%s,"workload":"%s","what":"throughput-ivm-%s-2-processes","report":%s}\n' "$rep" "$w" "$mode" \
        "$(cd "$PEERS_DIR" && node --no-node-snapshot "$HERE/ivm-throughput.js" "$PEERS_DIR" "$w" 2 2000 "$mode")"
    done
  done
  load
done
PEERS_EXTRA="wright-proc=$TARGET/examples/peer" bash "$PEERS_DIR/run.sh" --reps="$REPS" --peers="$PEERS" --workloads="$WORKLOADS"
load
# Enforcement only, with a deadline short enough for E1 (the harness SIGKILLs at 100 ms).
PEERS_EXTRA="wright-proc-e=$TARGET/examples/peer --deadline-ms 80" bash "$PEERS_DIR/run.sh" --no-bench --peers=wright-proc-e
