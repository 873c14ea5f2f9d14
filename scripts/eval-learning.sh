#!/usr/bin/env bash
# Measures learning from experience (issue 31) with a real local model: starts Qwen2.5-Coder
# (0.5B or 1.5B) through ../shared/realmodel/ and a fresh `wright serve`, runs the training
# variants of at least eight task families (each labelled with its check: a case made from the
# conversation), makes the held-out variants cases, runs one learning round, and reports the
# held-out passes before and after (replayed at temperature 0 in scratch copies of the agent's
# data), regressions, the items accepted, the tokens they add and the round's time. Checks are
# judged by Wright from stored data, never from the model's wording. Writes a Markdown table
# into docs/.
#
#   scripts/eval-learning.sh [0.5b|1.5b] [families]     families: e.g. 1,3 (all by default)
#   WRIGHT_BIN=...         the wright binary (default target/debug/wright; built if missing)
#   WRIGHT_REALMODEL=...   where setup.sh and serve.py live (default ../shared/realmodel)
#   EVAL_TASK_TIMEOUT=...  seconds per training run and per replay (default 420)
#   WRIGHT_TEMPERATURE=... the temperature of the training runs (replays always use 0)
#   EVAL_OUT=...           the report's path (default docs/eval-learning-<date>-<size>.md)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-0.5b}
families=${2:-}
realmodel=${WRIGHT_REALMODEL:-../shared/realmodel}
wright=${WRIGHT_BIN:-${CARGO_TARGET_DIR:-target}/debug/wright}
if [[ ! -x $wright ]]; then cargo build -p wright-server --bin wright; fi
model=$("$realmodel/setup.sh" "$size" | tail -1)
python=${REALMODEL_DIR:-$HOME/.cache/wright-realmodel}/venv/bin/python
exec python3 scripts/eval_learning.py --size "$size" --families "$families" --model "$model" \
  --python "$python" --serve "$realmodel/serve.py" --wright "$wright" \
  --task-timeout "${EVAL_TASK_TIMEOUT:-420}" --temperature "${WRIGHT_TEMPERATURE:-}" --out "${EVAL_OUT:-}"
