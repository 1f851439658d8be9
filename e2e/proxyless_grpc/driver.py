"""gRPC's own xDS client (grpcio) and gRPC servers for the proxyless scenario: nothing xDS-speaking here
is hand-written, only calls into grpcio.

  driver.py serve NAME[@IP][+tls]...
                            starts one gRPC server per NAME on IP (default 127.0.0.1), ephemeral
                            ports (with +tls: TLS with the certificate and key the files SERVER_CERT
                            and SERVER_KEY name), generic handlers: every unary method answers {"server", "method",
                            "metadata"} as JSON bytes; a method ending in "Stream" is server-streaming
                            and answers three such messages. Prints {"NAME": port, ...} once
                            listening, then {"rpc": NAME, "method": M} for every call a server
                            takes, and serves until stdin closes.
  driver.py client          reads one JSON command per line and answers one JSON line each:
                            {"target", "method", "n", "stream", "timeout", "metadata": [[k, v]]}
                            → {"servers": {NAME: count}, "errors": {CODE: count}, "detail": str|null}.
                            Channels are kept per target across commands (an open channel sees later
                            configuration changes). GRPC_XDS_BOOTSTRAP names the bootstrap. Channels
                            use gRPC's xDS credentials (gRFC A29), falling back to plaintext where
                            the cluster asks for no TLS: what a proxyless client should run with.
"""

import json
import os
import sys
from concurrent import futures

import grpc
import grpc.experimental


class Handler(grpc.GenericRpcHandler):
    def __init__(self, name):
        self.name = name

    def service(self, details):
        method = details.method

        print(json.dumps({"rpc": self.name, "method": method}), flush=True)

        def answer(context):
            meta = {k: v for k, v in context.invocation_metadata() if not k.startswith(":")}
            return json.dumps({"server": self.name, "method": method, "metadata": meta}).encode()

        if method.endswith("Stream"):
            def stream(_request, context):
                for _ in range(3):
                    yield answer(context)
            return grpc.unary_stream_rpc_method_handler(stream)
        return grpc.unary_unary_rpc_method_handler(lambda _request, context: answer(context))


def serve(names):
    servers, ports = [], {}
    for spec in names:
        spec, tls = spec.removesuffix("+tls"), spec.endswith("+tls")
        name, _, ip = spec.partition("@")
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        server.add_generic_rpc_handlers((Handler(name),))
        address = f"{ip or '127.0.0.1'}:0"
        if tls:
            pair = [read(os.environ["SERVER_KEY"]), read(os.environ["SERVER_CERT"])]
            ports[name] = server.add_secure_port(address, grpc.ssl_server_credentials([pair]))
        else:
            ports[name] = server.add_insecure_port(address)
        server.start()
        servers.append(server)
    print(json.dumps(ports), flush=True)
    sys.stdin.read()
    for server in servers:
        server.stop(0)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def run(channels, command):
    target = command["target"]
    channel = channels.get(target)
    if channel is None:
        credentials = grpc.xds_channel_credentials(grpc.experimental.insecure_channel_credentials())
        channel = channels[target] = grpc.secure_channel(target, credentials)
    metadata = [tuple(kv) for kv in command.get("metadata", [])]
    servers, errors, detail = {}, {}, None
    for _ in range(command.get("n", 1)):
        try:
            if command.get("stream"):
                call = channel.unary_stream(command["method"])
                replies = list(call(b"", timeout=command.get("timeout", 5), metadata=metadata))
                if len(replies) != 3:
                    raise RuntimeError(f"stream ended after {len(replies)} messages")
            else:
                call = channel.unary_unary(command["method"])
                replies = [call(b"", timeout=command.get("timeout", 5), metadata=metadata)]
            name = json.loads(replies[0])["server"]
            servers[name] = servers.get(name, 0) + 1
        except grpc.RpcError as e:
            code = e.code().name
            errors[code] = errors.get(code, 0) + 1
            detail = e.details()
    return {"servers": servers, "errors": errors, "detail": detail}


def client():
    channels = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps(run(channels, json.loads(line))), flush=True)
    for channel in channels.values():
        channel.close()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2:])
    else:
        client()
