#!/usr/bin/env bash
# Time to first token of the real 0.5B model for a first message through `wright serve`, with a
# cold llama.cpp prompt cache, and the first request's prompt tokens as llama.cpp counts them.
#
#   scripts/first-token-real-model.sh [native|text] [CONFIG_TOML]
#   CONFIG_TOML: written to the data dir's config.toml (e.g. '[agents.default.tools]\nloading = "all"')
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-native}
config=${2:-}
wright=${WRIGHT_BIN:-${CARGO_TARGET_DIR:-target}/debug/wright}
model=$(../shared/realmodel/setup.sh 0.5b | tail -1)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
llama_port=$(free_port); wright_port=$(free_port)
dir=$(mktemp -d); log=$dir/llama.log
printf "$config" > "$dir/config.toml"
OMP_WAIT_POLICY=PASSIVE "${REALMODEL_DIR:-$HOME/.cache/wright-realmodel}/venv/bin/python" ../shared/realmodel/serve.py "$model" "$llama_port" 16384 2 >"$log" 2>&1 &
llama=$!
trap 'kill $llama ${server:-} 2>/dev/null || true' EXIT
until curl -sf "127.0.0.1:$llama_port/health" >/dev/null; do sleep 0.5; done
extra=(); [ "$mode" = text ] && extra=(WRIGHT_TOOL_CALLS=text)
env -i PATH="$PATH" HOME="$HOME" WRIGHT_TOKEN=t OPENAI_BASE_URL="http://127.0.0.1:$llama_port/v1" \
  WRIGHT_MODEL=openai-compatible/qwen "${extra[@]}" "$wright" --data-dir "$dir" serve --bind "127.0.0.1:$wright_port" >"$dir/serve.log" 2>&1 &
server=$!
until curl -sf "127.0.0.1:$wright_port/api/health" >/dev/null; do sleep 0.2; done
api() { curl -s -H "Authorization: Bearer t" -H "Content-Type: application/json" "$@"; }
cid=$(api -d '{"title":"m"}' "127.0.0.1:$wright_port/api/agents/default/conversations" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
start=$(date +%s.%N)
api -d '{"text":"Hello! What can you do?"}' "127.0.0.1:$wright_port/api/conversations/$cid/messages" >/dev/null
until grep -q "prompt eval time\|cancel task" "$log"; do sleep 0.2; done
end=$(date +%s.%N)
echo "mode=$mode first_token_s=$(python3 -c "print(round($end-$start,1))") $(grep -o 'task.n_tokens = [0-9]*' "$log" | head -1) load=$(cut -d' ' -f1-3 /proc/loadavg)"
grep "prompt eval time" "$log" | head -1 || echo "the request was cancelled before the prompt was read"
