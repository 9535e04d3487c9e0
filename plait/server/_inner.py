"""Requests into the server's own app on behalf of a request (``/mcp``, ``/a2a``): the caller's headers
go with them, so every check and auth rule of the API routes applies to what those endpoints do; under
custom auth the user the outer request authenticated is lent to them (:mod:`plait.server._auth_inner`),
so ``@auth.authenticate`` runs once per outer request."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import orjson
from starlette.requests import Request
from starlette.types import Message

from plait.server._auth_inner import HEADER, lend
from plait.server._wire import as_dict

__all__ = ["InnerApi", "InnerError", "detail_of"]

# headers of the outer request that are not the caller's to pass on
_NOT_FORWARDED = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "accept-encoding",
        "connection",
        "transfer-encoding",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        HEADER,
    }
)


class InnerError(Exception):
    """An API answer with an error status (``detail``: its message)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def detail_of(data: Any, status: int) -> str:
    """An error answer's message, with its status."""
    found = as_dict(data)
    for key in ("detail", "message", "error"):
        if isinstance(found.get(key), str):
            return f"{found[key]} (HTTP {status})"
    return f"{data!r} (HTTP {status})"


class InnerApi:
    """A client of the app ``request`` reached, carrying ``request``'s own headers."""

    def __init__(self, request: Request) -> None:
        self.app = request.app
        self.headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        self.base_url = str(request.base_url)
        self.user = request.scope.get("user"), request.scope.get("auth")
        self.lent = contextlib.ExitStack()
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app),
            base_url=self.base_url,
            headers=self.headers,
            timeout=None,
        )

    async def __aenter__(self) -> InnerApi:
        if self.user[0] is not None:  # (authenticated once: the inner calls take that user)
            self.headers[HEADER] = self.lent.enter_context(lend(*self.user))
            self.client.headers[HEADER] = self.headers[HEADER]
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.client.__aexit__()
        finally:
            self.lent.close()

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, httpx.Headers]:
        """The answer's status, JSON (its text, when it is not JSON) and headers."""
        response = await self.client.request(method, path, json=body)
        try:
            data = orjson.loads(response.content) if response.content else None
        except orjson.JSONDecodeError:
            data = response.text
        return response.status_code, data, response.headers

    async def ok(self, method: str, path: str, body: Any = None) -> Any:
        """The answer's JSON.

        Raises:
            InnerError: the API answered with an error status.
        """
        status, data, _ = await self.call(method, path, body)
        if status >= 400:
            raise InnerError(status, detail_of(data, status))
        return data

    async def events(self, method: str, path: str, body: Any) -> AsyncGenerator[tuple[str, Any], None]:
        """The server-sent events of a streaming route as they come: ``(event, JSON data)``.

        (httpx's ASGI transport would hand the stream over only once it ended.)

        Raises:
            InnerError: the route answered with an error status.
        """
        url = httpx.URL(self.base_url).join(path)
        payload = orjson.dumps(body)
        headers = [(k.lower().encode(), v.encode()) for k, v in self.headers.items()]
        headers += [
            (b"host", url.netloc),
            (b"content-type", b"application/json"),
            (b"accept", b"text/event-stream"),
            (b"content-length", str(len(payload)).encode()),
        ]
        scope: dict[str, object] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path,
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 0),
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
        }
        sent, chunks = anyio.create_memory_object_stream[Message](100)
        gone = anyio.Event()
        first = True

        async def receive() -> Message:
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": payload, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            await sent.send(message)

        async def run() -> None:
            async with sent:
                await self.app(scope, receive, send)

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            try:
                async for event in _parse(chunks):
                    yield event
            finally:
                gone.set()
                group.cancel_scope.cancel()


def _message(block: bytes) -> tuple[str, Any] | None:
    """One SSE message's ``(event, JSON data)`` (``None``: it has no data)."""
    event, data = "message", list[bytes]()
    for line in block.split(b"\n"):
        if line.startswith(b"event:"):
            event = line[6:].strip().decode()
        elif line.startswith(b"data:"):
            data.append(line[5:].strip())
    return (event, orjson.loads(b"\n".join(data))) if data else None


def _refusal(status: int, body: bytes) -> InnerError:
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = body.decode(errors="replace")
    return InnerError(status, detail_of(parsed, status))


async def _parse(chunks: Any) -> AsyncGenerator[tuple[str, Any], None]:
    """``(event, data)`` of an SSE response's messages (an error status raises :class:`InnerError`)."""
    status, buffer = 200, b""
    async for message in chunks:
        if message["type"] == "http.response.start":
            status = int(message["status"])
            continue
        buffer += message.get("body", b"").replace(b"\r\n", b"\n")
        while status < 400 and b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            found = _message(block)
            if found is not None:
                yield found
        if not message.get("more_body"):
            break
    if status >= 400:
        raise _refusal(status, buffer)
