"""``http.app`` of the config: the user's Starlette/FastAPI app, served beside the API.

As in LangGraph's server, the user's routes come first: a request one of them matches (fully, or
by path with another method, when no API route matches fully) goes to the user's app, through its
own middleware and exception handlers; any other request reaches the API. Every request passes
the server's own checks first (Host header, ``--auth-token``, JSON bodies, body size).
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

__all__ = ["UserRoutes"]


class UserRoutes(BaseRoute):
    """The routes of the user's ``app``, as one route of the server's router (put it first)."""

    def __init__(self, app: Starlette) -> None:
        self.app = app

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """``FULL`` if one of the app's routes matches fully, ``PARTIAL`` if one matches the path only."""
        best = Match.NONE
        for route in self.app.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return Match.FULL, {}
            if match is Match.PARTIAL:
                best = Match.PARTIAL
        return best, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand the request to the user's app (its router sets its own ``router`` and ``route``)."""
        scope.pop("router", None)
        await self.app(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        """The path of the user's route ``name``."""
        return self.app.url_path_for(name, **path_params)
