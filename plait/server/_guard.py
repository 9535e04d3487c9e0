"""What every request passes before a route runs: the Host header (on a loopback bind), the
bearer token, a JSON content type for bodies that change state, and the body size limit.

On loopback a browser page of another site can still reach the server: through DNS rebinding (its
own name pointed at 127.0.0.1, so the Host header names that site: refused with 400) or with a
"simple" cross-site request (``text/plain`` or a form, sent without a CORS preflight: refused with
415, since every body the API reads is JSON; the config's own ``http.app`` routes take any body, as
LangGraph's server lets them: a webhook posts a form). A WebSocket handshake passes the Host and token
checks too, and one a page of another site opens (its ``Origin``) is refused with 403 unless CORS
allows that origin.
"""

from __future__ import annotations

import hmac
import ipaddress

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plait.server._http import json_response
from plait.server._wire import ApiError

__all__ = ["Guard", "is_loopback"]

# open to a GET or HEAD without the token (the API's shape, no data)
_OPEN_PATHS = ("/ok", "/info", "/ui", "/ui/", "/docs", "/openapi.json")
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine's loopback."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split_host(header: str) -> tuple[str, int | None]:
    """A Host header's name and port (``None``: no port; -1: not a number)."""
    if header.startswith("["):  # [::1]:2024
        name, _, rest = header[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port = header.partition(":")
    if port and not port.isdigit():
        return name.lower().rstrip("."), -1  # matches no port
    return name.lower().rstrip("."), int(port) if port else None


class Guard:
    """The checks of the module docstring, in that order, as ASGI middleware."""

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        max_body: int,
        allowed_hosts: tuple[str, ...] = (),
        origins: tuple[str, ...] = (),
        user_routes: BaseRoute | None = None,
    ) -> None:
        self.app, self.token, self.max_body = app, token, max_body
        self.user_routes = user_routes
        """The config's ``http.app`` routes (a request they match fully may send any body)."""
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.origins = frozenset(origins)
        """Origins whose pages may open a WebSocket (CORS's; ``*``: any)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._host_refused(scope, headers.get("host")) or self._auth_refused(scope, headers)
        if refusal is None and scope["type"] == "websocket":
            refusal = self._origin_refused(headers)
        elif refusal is None:
            refusal = self._type_refused(scope, headers)
        if refusal is not None:  # (a WebSocket handshake is answered with the status too)
            status, detail, extra = refusal
            await json_response({"detail": detail}, status, extra)(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            detail = f"Request body larger than {self.max_body} bytes (--max-body)"
            await json_response({"detail": detail}, 413)(scope, receive, send)
            return
        await self.app(scope, self._limited(receive), send)

    def _host_refused(self, scope: Scope, header: str | None) -> tuple[int, str, dict[str, str]] | None:
        """400 for a Host header naming another site, on a connection to a loopback address."""
        server = scope.get("server")
        if header is None or not server or not is_loopback(str(server[0])):
            return None
        name, port = _split_host(header)
        if header.lower() in self.allowed_hosts or name in self.allowed_hosts:
            return None
        if (name in _LOCAL_NAMES or name == str(server[0]).lower()) and port in (None, server[1]):
            return None
        detail = (
            f"Host header {header!r} is not this server (localhost, 127.0.0.1, [::1] on port {server[1]}); "
            "a proxy's name can be allowed with --allowed-host NAME"
        )
        return 400, detail, {}

    def _auth_refused(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, dict[str, str]] | None:
        """401 without the bearer token (or ``x-api-key``), when one is set."""
        method = scope.get("method")
        if not self.token or method == "OPTIONS":
            return None
        if method in ("GET", "HEAD") and scope["path"] in _OPEN_PATHS:
            return None
        given = headers.get("authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            return None
        if hmac.compare_digest(headers.get("x-api-key", "").encode(), self.token.encode()):
            return None
        return 401, "Missing or invalid bearer token", {"WWW-Authenticate": "Bearer"}

    def _origin_refused(self, headers: dict[str, str]) -> tuple[int, str, dict[str, str]] | None:
        """403 for a WebSocket a page of another site opens (browsers send its ``Origin``; a
        WebSocket is not held back by CORS): allowed are pages of this server and CORS's origins."""
        origin = headers.get("origin")
        if origin is None or "*" in self.origins or origin in self.origins:
            return None
        if origin.partition("://")[2].lower() == headers.get("host", "").lower():
            return None
        detail = (
            f"a WebSocket opened by a page of {origin} is refused (another site); "
            "allow the origin with --cors-origin or the config's http.cors.allow_origins"
        )
        return 403, detail, {}

    def _type_refused(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, dict[str, str]] | None:
        """415 for a body that changes state and is not ``application/json`` (but to the user's routes)."""
        if scope["method"] not in _CHANGES:
            return None
        if self.user_routes is not None and self.user_routes.matches(scope)[0] is Match.FULL:
            return None
        length = headers.get("content-length", "")
        if "transfer-encoding" not in headers and (not length.isdigit() or int(length) == 0):
            return None  # no body
        kind = headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind == "application/json":
            return None
        detail = (
            f"{scope['method']} bodies must be sent as Content-Type: application/json, got {kind or 'none'!r}"
        )
        return 415, detail, {}

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise ApiError(413, f"Request body larger than {self.max_body} bytes (--max-body)")
            return message

        return counted
