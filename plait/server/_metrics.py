"""``GET /metrics``: the server's Prometheus series, in the text exposition format.

Each app has a registry of its own (two apps in one process, as in tests, do not share series).
With several worker processes (PostgreSQL) every process keeps and reports its own counters: a
scrape reaches one of them; the run queue gauges, read from the database, are the same in all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plait.server._api import Api
from plait.server._data import runs
from plait.server._series import Metrics
from plait.server._state import state_of

__all__ = ["Metrics", "RecordRequests", "api", "routes"]

api = Api("System")


@api.get(
    "/metrics",
    "System Metrics",
    response={"type": "string", "description": "Prometheus text exposition format."},
    media="text/plain",
)
async def _metrics(request: Request) -> Response:
    """The server's Prometheus series: runs by status, run durations, the run queue, HTTP requests."""
    state = state_of(request)
    metrics: Metrics = request.app.state.metrics
    counts = await runs.inflight_counts(state.db)
    metrics.queued.set(counts.get("pending", 0))
    metrics.running.set(counts.get("running", 0))
    metrics.executing.set(len(state.worker.tasks) if state.worker is not None else 0)
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)


routes = api.routes()


class RecordRequests:
    """Counts every HTTP request by method, route template (``/threads/{thread_id}``; ``unmatched``
    for a path no route serves) and status code."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: Sequence[BaseRoute] = ()) -> None:
        self.app, self.metrics, self.routes = app, metrics, routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # (no response began: the server answers 500)

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.requests.labels(scope["method"], self._template(scope), str(status)).inc()

    def _template(self, scope: Scope) -> str:
        """The path template of the route that served the request (Starlette's router records it as
        ``scope["route"]``; an older one does not, and the routes are matched again)."""
        route: Any = scope.get("route")
        if route is None:
            route = next((r for r in self.routes if r.matches(scope)[0] is Match.FULL), None)
        return getattr(route, "path", None) or "unmatched"
