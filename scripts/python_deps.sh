# Sourced by test.sh: makes sure python3 can import the official MCP Python SDK (PyPI `mcp`), which the
# end-to-end scenario s24_mcp_sdk runs as both MCP server and client, and gRPC's own Python library
# (PyPI `grpcio`), whose built-in xDS client the proxyless scenario s26_proxyless_grpc drives. Installs
# them with pip when the import fails; where pip refuses to install into this Python (PEP 668
# "externally managed"), installs them into target/python-deps instead and puts that on PYTHONPATH (the
# scenarios also look there by themselves).

MCP_SDK_VERSION=2.3.0
GRPCIO_VERSION=1.85.1
# Where the SDK goes when pip refuses to install into this Python.
PYTHON_DEPS_DIR="target/python-deps"

mcp_sdk_importable() {
  python3 -c 'import mcp.server.mcpserver, mcp.client.streamable_http, grpc' >/dev/null 2>&1
}

ensure_mcp_sdk() {
  if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 not found: the MCP scenario needs it, with the MCP Python SDK (mcp==$MCP_SDK_VERSION)" >&2
    exit 1
  fi
  if [ -d "$PWD/$PYTHON_DEPS_DIR" ]; then
    export PYTHONPATH="$PWD/$PYTHON_DEPS_DIR${PYTHONPATH:+:$PYTHONPATH}"
  fi
  if mcp_sdk_importable; then
    return
  fi
  echo "== installing the MCP Python SDK and grpcio from PyPI (mcp==$MCP_SDK_VERSION grpcio==$GRPCIO_VERSION)"
  if ! python3 -m pip install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION" "grpcio==$GRPCIO_VERSION"; then
    echo "== pip could not install into this Python; installing into $PYTHON_DEPS_DIR instead"
    python3 -m pip install --quiet --disable-pip-version-check --target "$PYTHON_DEPS_DIR" \
      "mcp==$MCP_SDK_VERSION" "grpcio==$GRPCIO_VERSION"
    case ":${PYTHONPATH:-}:" in
      *":$PWD/$PYTHON_DEPS_DIR:"*) ;;
      *) export PYTHONPATH="$PWD/$PYTHON_DEPS_DIR${PYTHONPATH:+:$PYTHONPATH}" ;;
    esac
  fi
  if ! mcp_sdk_importable; then
    echo "the MCP Python SDK or grpcio is still not importable: run \`python3 -m pip install mcp==$MCP_SDK_VERSION grpcio==$GRPCIO_VERSION\`" >&2
    exit 1
  fi
}
