"""An MCP server built with the official MCP Python SDK (PyPI `mcp`, 2.x), for the e2e suite (scenario
s24_mcp_sdk): `MCPServer` (v1's FastMCP) over the streamable HTTP transport, stateful sessions, an
in-memory `EventStore` so streams are resumable (`Last-Event-ID`), served by uvicorn, over TLS when given a
certificate.

It binds an ephemeral port on --host and prints `{"listening": PORT}` as its first stdout line. After that,
every HTTP request that reaches it is printed as one JSON line `{"request": {...}}` when its answer starts
(method, path, scheme, Host, MCP session id, Last-Event-ID, protocol version, status): the suite reads these
to see what Envoy delivered, e.g. that a session's DELETE reached the server and was accepted. Logs go to
stderr. Loopback only; no network access.

Tools: `echo` (quick), `slow` (one progress notification a second for --slow-seconds, then a result) and
`resumable` (a progress notification, then the server closes the request's SSE stream, sends another
progress notification while the client is away, and answers once the client has resumed the stream with
`Last-Event-ID`).
"""

import argparse
import asyncio
import itertools
import json
import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.transport_security import TransportSecuritySettings


class MemoryEventStore(EventStore):
    """Every event of every stream, in order, so a reconnecting client can be sent what it missed."""

    def __init__(self) -> None:
        self._events: list[tuple[EventId, StreamId, object]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message) -> EventId:
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        at = next((i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id), None)
        if at is None:
            return None
        stream_id = self._events[at][1]
        for event_id, sid, message in self._events[at + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def say(record: dict) -> None:
    print(json.dumps(record), flush=True)


class Journal:
    """ASGI middleware: one stdout line per HTTP request, when its response starts."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        async def journaled_send(message) -> None:
            if message["type"] == "http.response.start":
                say(
                    {
                        "request": {
                            "method": scope["method"],
                            "path": scope["path"],
                            "scheme": scope["scheme"],
                            "host": headers.get("host"),
                            "session": headers.get("mcp-session-id"),
                            "last_event_id": headers.get("last-event-id"),
                            "protocol_version": headers.get("mcp-protocol-version"),
                            "status": message["status"],
                        }
                    }
                )
            await send(message)

        await self.app(scope, receive, journaled_send)


def build(args) -> MCPServer:
    mcp = MCPServer(name="pier-e2e-sdk", log_level="WARNING")

    @mcp.tool()
    def echo(text: str) -> str:
        """Returns its argument."""
        return f"echo: {text}"

    @mcp.tool()
    async def slow(ctx: Context) -> str:
        """Reports progress once a second for --slow-seconds, then answers."""
        for tick in range(1, args.slow_seconds + 1):
            await asyncio.sleep(1)
            await ctx.report_progress(tick, args.slow_seconds, f"tick {tick}")
        return f"slow done after {args.slow_seconds} s"

    @mcp.tool()
    async def resumable(ctx: Context) -> str:
        """Closes its own SSE stream midway; the client resumes it with Last-Event-ID."""
        await ctx.report_progress(1, 3, "before the break")
        await ctx.close_sse_stream()
        await asyncio.sleep(0.2)
        await ctx.report_progress(2, 3, "while the client is away")
        # The client waits the retry interval (--retry-ms) and reconnects; the answer comes after that, on
        # the resumed stream (or, if the reconnection is late, replayed from the event store).
        await asyncio.sleep(args.retry_ms / 1000 + 1.5)
        await ctx.report_progress(3, 3, "after the resumption")
        return "resumed"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True, help="loopback address to bind (port: ephemeral)")
    parser.add_argument("--path", default="/mcp", help="the streamable HTTP endpoint's path")
    parser.add_argument("--allowed-host", action="append", default=[], help="Host header values to accept")
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    parser.add_argument("--slow-seconds", type=int, default=17)
    parser.add_argument("--retry-ms", type=int, default=500)
    args = parser.parse_args()

    mcp = build(args)
    app = mcp.streamable_http_app(
        streamable_http_path=args.path,
        event_store=MemoryEventStore(),
        retry_interval=args.retry_ms,
        # DNS rebinding protection on, with the Host the suite's requests carry through Envoy: a proxy that
        # rewrote Host would be refused (421).
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=args.allowed_host
        ),
        host=args.host,
    )

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, 0))
    sock.listen(128)
    config = uvicorn.Config(
        Journal(app),
        log_level="warning",
        access_log=False,
        # The journal's `scheme` is this connection's (TLS or not), not Envoy's X-Forwarded-Proto, which
        # uvicorn would otherwise trust from 127.0.0.1.
        proxy_headers=False,
        ssl_certfile=args.certfile,
        ssl_keyfile=args.keyfile,
        timeout_graceful_shutdown=1,
    )
    say({"listening": sock.getsockname()[1]})
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
