"""The ASGI application: routes, errors as JSON, auth, body limits, CORS, and the worker's lifespan."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from plait.server import (
    _a2a,
    _assistants,
    _crons,
    _metrics,
    _openapi,
    _runs,
    _store,
    _thread_events,
    _thread_state,
    _thread_storage,
    _thread_stream,
    _threads,
    _ui,
)
from plait.server._api import Api
from plait.server._auth import Authenticate, load_auth
from plait.server._auth_config import secure_document
from plait.server._config import Settings, load_http_app
from plait.server._custom import UserRoutes
from plait.server._guard import Guard
from plait.server._http import CatchErrors, error_response, json_response
from plait.server._mcp import McpEndpoint
from plait.server._state import open_state, state_of
from plait.server._wire import ApiError, as_dict, as_list
from plait.server._worker import Worker

__all__ = ["create_app"]

_system = Api("System", "Health, server information, metrics and this documentation.")


@_system.get("/ok", "Health Check", response={"type": "object", "properties": {"ok": {"const": True}}})
async def _ok(request: Request) -> Response:
    """``{"ok": true}`` while the server answers."""
    return json_response({"ok": True})


@_system.get("/info", "Server Information", response={"type": "object"})
async def _info(request: Request) -> Response:
    """The server's version, database, graphs and feature flags."""
    try:
        plait_version = version("plait")
    except PackageNotFoundError:
        plait_version = "unknown"
    state = state_of(request)
    return json_response(
        {
            "version": plait_version,
            "server": "plait",
            "database": state.db.dialect,
            "graphs": sorted(state.graphs),
            "flags": {"assistants": True, "crons": True, "langsmith": False, "strict_resume": True},
        }
    )


def _documented() -> list[Api]:
    """The declared endpoints ``/openapi.json`` and ``/docs`` list, by resource."""
    return [
        _system,
        _metrics.api,
        _assistants.api,
        _threads.api,
        _thread_state.api,
        _thread_stream.api,
        _runs.api,
        _runs.stateless,
        _crons.api,
        _thread_events.api,
        _thread_storage.api,
        _store.api,
    ]


def _extra_docs(mcp: McpEndpoint | None, settings: Settings) -> list[Api]:
    """The documented endpoints of ``/mcp`` and ``/a2a`` when they are on (``http.disable_*``)."""
    return [*([mcp.api] if mcp is not None else []), *([_a2a.api] if "a2a" not in settings.disabled else [])]


def create_app(settings: Settings) -> Starlette:
    """The server application for ``settings`` (its lifespan opens the database and starts the worker,
    and runs the lifespan of the config's ``http.app``, whose routes come before the API's)."""
    user_app = load_http_app(settings.http_app, settings.config_path) if settings.http_app else None
    metrics = _metrics.Metrics()
    mcp = None if "mcp" in settings.disabled else McpEndpoint(settings.max_body)
    # the auth's security schemes in /openapi.json, as LangGraph's server lists them
    openapi = as_dict(settings.auth.get("openapi"))
    finish = partial(secure_document, openapi) if openapi else None
    user_routes = UserRoutes(user_app) if user_app is not None else None
    auth = (
        load_auth(settings.auth, settings.config_path, bool(settings.auth["custom_routes"]))
        if settings.auth
        else None
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None, None]:
        state = await open_state(settings)
        await _assistants.ensure_defaults(state)
        app.state.server = state
        state.metrics = metrics
        state.auth = auth
        state.worker = Worker(state)
        await state.worker.start()
        try:
            async with AsyncExitStack() as stack:
                if user_app is not None:
                    await stack.enter_async_context(user_app.router.lifespan_context(user_app))
                if mcp is not None:
                    await stack.enter_async_context(mcp.running())
                yield
        finally:
            await state.worker.stop(drain=settings.lease_ttl)
            await state.close()

    routes: list[BaseRoute] = [
        *([user_routes] if user_routes is not None else []),
        *_system.routes(),
        *_openapi.docs_api([*_documented(), *_extra_docs(mcp, settings)], finish).routes(),
        *_assistants.routes,
        *_threads.routes,
        *_thread_state.routes,
        *_thread_stream.routes,
        *_thread_events.routes,
        *_thread_storage.routes,
        *_crons.routes,
        *_runs.routes,
        *_store.routes,
        *_ui.routes,
        *_metrics.routes,
        *(mcp.routes if mcp is not None else []),
        *(_a2a.routes if "a2a" not in settings.disabled else []),
    ]
    middleware = [
        Middleware(_metrics.RecordRequests, metrics=metrics, routes=routes),
        Middleware(CatchErrors),
        Middleware(
            Guard,
            token=settings.auth_token,
            max_body=settings.max_body,
            allowed_hosts=settings.allowed_hosts,
            origins=(*settings.cors_origins, *map(str, as_list(settings.cors.get("allow_origins")))),
            user_routes=user_routes,
        ),
    ]
    if auth is not None:  # the config's custom auth (LangGraph's "auth"), after the Host/body checks
        auth.user_routes = user_routes
        middleware.append(Middleware(Authenticate, auth=auth))
    if settings.cors_origins or settings.cors:
        options: dict[str, Any] = {  # (CORSMiddleware's keyword arguments, of the config)
            "allow_methods": ["*"],
            "allow_headers": ["*"],
            "expose_headers": ["Content-Location", "Location", "X-Pagination-Total", "X-Pagination-Next"],
            **settings.cors,  # the config's http.cors, as LangGraph's server reads it
        }
        options["allow_origins"] = [*options.get("allow_origins", []), *settings.cors_origins]
        middleware.insert(1, Middleware(CORSMiddleware, **options))  # (error answers get its headers too)
    handlers: dict[Any, Any] = {ApiError: error_response, HTTPException: error_response}
    app = Starlette(routes=routes, middleware=middleware, exception_handlers=handlers, lifespan=lifespan)
    app.state.metrics = metrics
    return app
