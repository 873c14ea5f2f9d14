#!/usr/bin/env bash
# Instruction counts of a worker serving N calls of one workload, for the per-call breakdown in
# ARCHITECTURE.md (instruction counts, unlike timings, repeat on a loaded machine).
#
#   bash crates/wright-sandbox/bench/callgrind.sh WORKLOAD.js [N] [--fresh-code]
#
# Feeds the worker loop (release build) N `Run` messages on its stdin, exactly
# as the pool frames them, and prints callgrind's inclusive costs. `--fresh-code` appends a
# distinct comment to each call's code, so that nothing comes from the compiled-code cache (the
# cost of compiling). The worker runs unconfined (`examples/worker_profile.rs`): valgrind cannot run a process
# that lowers its own descriptor limit. The loop and the engine are the real ones.
set -euo pipefail
FILE="$1"; N="${2:-2000}"; FRESH="${3:-}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
# Needs: cargo build --release -p wright-sandbox --features profiling --example worker_profile
WORKER="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/worker_profile"
INPUT_FILE="${FILE%.js}-input.json"
OUT="${OUT:-/tmp/wright-callgrind}"
mkdir -p "$OUT"
python3 - "$FILE" "$N" "$FRESH" "$INPUT_FILE" > "$OUT/stdin.bin" <<'PY'
import json, os, sys
file, n, fresh, input_file = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "--fresh-code", sys.argv[4]
code = open(file, encoding="utf-8").read()
text = open(input_file, encoding="utf-8").read().encode() if os.path.exists(input_file) else None
limits = {"memory_limit_bytes": 64 << 20, "stack_limit_bytes": 1 << 20, "deadline_ms": 30000,
          "max_result_bytes": 1 << 20, "max_log_bytes": 64 << 10, "max_log_entries": 1000, "max_fetches": 20}
out = sys.stdout.buffer
for i in range(n):
    body = (code + (f"\n// call {i}" if fresh else "")).encode()
    header = {"run": {"code_bytes": len(body), "input_bytes": None if text is None else len(text),
                      "args": {}, "limits": limits}}
    out.write(json.dumps(header, separators=(",", ":")).encode() + b"\n" + body + (text or b""))
PY
valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
  "$WORKER" < "$OUT/stdin.bin" > "$OUT/stdout.jsonl" 2> "$OUT/valgrind.log"
echo "calls answered: $(grep -o "\"done\"" "$OUT/stdout.jsonl" | wc -l)  (first: $(head -c 200 "$OUT/stdout.jsonl"))"
callgrind_annotate --inclusive=yes "$OUT/callgrind.out" 2>/dev/null | head -"${LINES_SHOWN:-60}"
