"""An MCP client built with the official MCP Python SDK (PyPI `mcp`, 2.x), for the e2e suite (scenario
s24_mcp_sdk): `ClientSession` over the SDK's streamable HTTP client transport, pointed at Envoy.

One main session: initialize, list the tools, call `echo`, call `resumable` (the server breaks the SSE
stream; the SDK transport reconnects with `Last-Event-ID`), then, at the same time, call `slow` (counting
its progress notifications) and run --sessions more sessions concurrently, each initializing and calling
`echo`. Every session ends with the transport's DELETE (`terminate_on_close`); afterwards a plain POST
carrying each ended session's id must be refused with 404.

Prints one JSON summary on stdout (also on failure, with `error`); exits non-zero on failure. Every HTTP
request carries `Host: --host-header`.
"""

import argparse
import asyncio
import json
import sys
import time
import traceback

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import ClientMessageMetadata


def http_client(args, seen: dict) -> httpx2.AsyncClient:
    """An HTTP client that records the session id the server assigns."""

    async def on_response(response: httpx2.Response) -> None:
        session = response.headers.get("mcp-session-id")
        if session:
            seen.setdefault("session", session)

    return httpx2.AsyncClient(
        headers={"Host": args.host_header},
        timeout=httpx2.Timeout(30.0, read=120.0),
        event_hooks={"response": [on_response]},
    )


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call_summary(session: ClientSession, name: str, arguments: dict | None = None, **extra) -> dict:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    started = time.monotonic()
    result = await session.call_tool(name, arguments, progress_callback=on_progress, **extra)
    return {
        "is_error": bool(result.is_error),
        "text": text_of(result),
        "progress": len(progress),
        "seconds": round(time.monotonic() - started, 2),
    }


async def resumable_call(session: ClientSession) -> dict:
    """`resumable`, with the resumption tokens (SSE event ids) the transport reports recorded."""
    progress: list[float] = []
    tokens: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_token(token: str) -> None:
        tokens.append(token)

    result = await session.send_request(
        types.CallToolRequest(params=types.CallToolRequestParams(name="resumable", arguments={})),
        types.CallToolResult,
        metadata=ClientMessageMetadata(on_resumption_token_update=on_token),
        progress_callback=on_progress,
    )
    return {
        "is_error": bool(result.is_error),
        "text": text_of(result),
        "progress": len(progress),
        "resumption_tokens": tokens,
    }


async def side_session(args, index: int) -> dict:
    seen: dict = {}
    async with http_client(args, seen) as http:
        async with streamable_http_client(args.url, http_client=http, terminate_on_close=True) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                echo = await call_summary(session, "echo", {"text": f"side {index}"})
    return {"session": seen.get("session"), "echo": echo}


async def status_with_session(args, session_id: str, protocol_version: str) -> int:
    """What a request in `session_id` gets now (404 once the session has ended)."""
    async with httpx2.AsyncClient(headers={"Host": args.host_header}, timeout=30.0) as http:
        response = await http.post(
            args.url,
            headers={
                "mcp-session-id": session_id,
                "mcp-protocol-version": protocol_version,
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
            content=json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}),
        )
        return response.status_code


async def run(args, summary: dict) -> None:
    seen: dict = {}
    async with http_client(args, seen) as http:
        async with streamable_http_client(args.url, http_client=http, terminate_on_close=True) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                summary["protocol_version"] = init.protocol_version
                summary["server"] = init.server_info.name
                summary["session"] = seen.get("session")
                summary["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
                summary["echo"] = await call_summary(session, "echo", {"text": "through envoy"})
                summary["resumable"] = await resumable_call(session)
                slow, *sides = await asyncio.gather(
                    call_summary(session, "slow", read_timeout_seconds=args.timeout),
                    *(side_session(args, i) for i in range(args.sessions)),
                )
                summary["slow"] = slow
                summary["sessions"] = sides
        # The transport's DELETE has been sent and answered by now.
    ended = [summary["session"], *(s["session"] for s in summary["sessions"])]
    summary["after_delete"] = {
        s: await status_with_session(args, s, summary["protocol_version"]) for s in ended if s
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the MCP endpoint, through Envoy")
    parser.add_argument("--host-header", required=True)
    parser.add_argument("--sessions", type=int, default=3, help="concurrent side sessions")
    parser.add_argument("--timeout", type=float, default=60.0, help="bound on the whole run, seconds")
    args = parser.parse_args()
    summary: dict = {}
    try:
        asyncio.run(asyncio.wait_for(run(args, summary), args.timeout))
    except BaseException as e:  # noqa: BLE001 - reported in the summary, and the exit code says it failed
        summary["error"] = f"{type(e).__name__}: {e}"
        summary["traceback"] = traceback.format_exc()
        print(json.dumps(summary), flush=True)
        return 1
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
