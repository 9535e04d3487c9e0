"""``plait inspect DB --web``: the web inspector for a bare checkpoint database, read-only.

A small Starlette application over an open checkpoint saver (no config file, no graphs):
the page at ``/ui`` and its JSON helpers under ``/ui/api``. Every endpoint only reads.
Bound to the loopback interface, it also refuses requests whose ``Host`` is not a loopback
name, so a web page elsewhere cannot read the database through DNS rebinding.
"""

from __future__ import annotations

import html
import socket
import webbrowser
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from plait.checkpoint.base import BaseCheckpointSaver
from plait.errors import SerializationError
from plait.server import _inspect_data as data
from plait.server._http import CatchErrors, error_response, json_response, query_int
from plait.server._inspect_page import PAGE
from plait.server._wire import ApiError

__all__ = ["bind", "create_inspect_app", "inspector_url", "run_inspector"]


def create_inspect_app(saver: BaseCheckpointSaver, label: str, *, local_only: bool = True) -> Starlette:
    """The read-only inspector over ``saver``; ``label`` names the database on the page (no password)."""

    async def call(fn: Callable[..., Any], *args: Any) -> Response:
        return json_response(await run_in_threadpool(fn, saver, *args))

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE.replace("{{DB}}", html.escape(label)))

    async def info(request: Request) -> Response:
        return json_response({"database": label, "read_only": True, "graphs": []})

    async def threads(request: Request) -> Response:
        query = request.query_params.get("q", "")
        return await call(
            data.threads, query, query_int(request, "limit", 50), query_int(request, "offset", 0)
        )

    async def thread(request: Request) -> Response:
        return await call(data.thread, request.path_params["thread_id"])

    async def timeline(request: Request) -> Response:
        limit = query_int(request, "limit", 100)
        return await call(data.timeline, request.path_params["thread_id"], limit)

    async def state(request: Request) -> Response:
        params = request.path_params
        return await call(data.state, params["thread_id"], params.get("checkpoint_id"))

    async def diff(request: Request) -> Response:
        first, second = request.query_params.get("a"), request.query_params.get("b")
        if not first or not second:
            raise ApiError(422, "diff needs two checkpoint ids: ?a=CHECKPOINT_ID&b=CHECKPOINT_ID")
        return await call(data.diff, request.path_params["thread_id"], first, second)

    async def home(request: Request) -> Response:
        return RedirectResponse("/ui")

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/ui", page, methods=["GET"]),
        Route("/ui/", page, methods=["GET"]),
        Route("/ui/api/info", info, methods=["GET"]),
        Route("/ui/api/threads", threads, methods=["GET"]),
        Route("/ui/api/threads/{thread_id}", thread, methods=["GET"]),
        Route("/ui/api/threads/{thread_id}/timeline", timeline, methods=["GET"]),
        Route("/ui/api/threads/{thread_id}/state", state, methods=["GET"]),
        Route("/ui/api/threads/{thread_id}/state/{checkpoint_id}", state, methods=["GET"]),
        Route("/ui/api/threads/{thread_id}/diff", diff, methods=["GET"]),
    ]
    middleware: list[Middleware] = [Middleware(CatchErrors)]  # (what would reach the ASGI server)
    if local_only:
        hosts = ["127.0.0.1", "localhost", "[::1]", "::1"]
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=hosts))  # pyright: ignore[reportArgumentType]  # starlette's middleware factory typing
    handlers: dict[Any, Any] = {
        ApiError: _api_error,
        SerializationError: _unreadable,
        HTTPException: error_response,
    }
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)


async def _api_error(request: Request, exc: Exception) -> Response:
    error = exc if isinstance(exc, ApiError) else ApiError(500, str(exc))
    return json_response({"detail": error.detail}, error.status)


async def _unreadable(request: Request, exc: Exception) -> Response:
    return json_response({"detail": f"cannot read a stored row: {exc}"}, 422)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port).

    Raises:
        OSError: the address is in use or cannot be bound.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class _Server(uvicorn.Server):
    """uvicorn, calling ``on_ready`` once it listens."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], object] | None) -> None:
        super().__init__(config)
        self.on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.on_ready is not None:
            self.on_ready()


def _is_loopback(host: str) -> bool:
    return host == "::1" or host.startswith("127.")


def inspector_url(sock: socket.socket) -> str:
    """The page's address for a socket from :func:`bind` (a wildcard address shows as loopback)."""
    host, port = sock.getsockname()[:2]
    shown = str({"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host))  # noqa: S104 - naming, not binding
    return f"http://{f'[{shown}]' if ':' in shown else shown}:{port}/ui"


def run_inspector(
    saver: BaseCheckpointSaver, label: str, sock: socket.socket, *, open_browser: bool = False
) -> None:
    """Serve the inspector for ``saver`` on the bound ``sock`` until interrupted (Ctrl+C, SIGTERM)."""
    app = create_inspect_app(saver, label, local_only=_is_loopback(sock.getsockname()[0]))
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)
    url = inspector_url(sock)
    on_ready = (lambda: webbrowser.open(url)) if open_browser else None
    _Server(config, on_ready).run(sockets=[sock])
