#!/usr/bin/env bash
# Evaluates Wright with a real local model: installs and starts Qwen2.5-Coder (0.5B or 1.5B)
# through ../shared/realmodel/ (llama.cpp's OpenAI-compatible server, from PyPI), runs
# `wright serve` against it in native and text-protocol modes, and sends a suite of tasks
# across the platform. Success is judged from what Wright stored (state, notes, the agent's
# database, its tools, executions), never from the wording. Writes a Markdown table with the
# date and model into docs/.
#
#   scripts/eval-real-model.sh [0.5b|1.5b] [native,text] [task,task,...]
#   WRIGHT_BIN=...        the wright binary (default target/debug/wright; built if missing)
#   WRIGHT_REALMODEL=...  where setup.sh and serve.py live (default ../shared/realmodel)
#   EVAL_TASK_TIMEOUT=... seconds per task (default 420)
#   EVAL_MEASURE=0        skip the first-request measurement (all tools vs default toolsets)
#   WRIGHT_TEMPERATURE=0  the sampling temperature Wright sends (default: the server's own, 0.8)
#   EVAL_AGENT=...        [agent] settings, `;`-separated, e.g. "require_first_call = true"
#   EVAL_SUFFIX=...       appended to the results file's name (a second run of the day)
# With none of these set, the model gets the profile Wright chooses for it (issue 32).
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-0.5b}
modes=${2:-native,text}
tasks=${3:-}
realmodel=${WRIGHT_REALMODEL:-../shared/realmodel}
wright=${WRIGHT_BIN:-${CARGO_TARGET_DIR:-target}/debug/wright}
if [[ ! -x $wright ]]; then cargo build -p wright-server --bin wright; fi
model=$("$realmodel/setup.sh" "$size" | tail -1)
python=${REALMODEL_DIR:-$HOME/.cache/wright-realmodel}/venv/bin/python
exec python3 scripts/eval_real_model.py --size "$size" --modes "$modes" --tasks "$tasks" \
  --model "$model" --python "$python" --serve "$realmodel/serve.py" --wright "$wright" \
  --measure "${EVAL_MEASURE:-1}" --task-timeout "${EVAL_TASK_TIMEOUT:-420}" \
  --temperature "${WRIGHT_TEMPERATURE:-}" --agent-config "${EVAL_AGENT:-}" --suffix="${EVAL_SUFFIX:-}"
