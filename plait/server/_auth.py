"""Custom auth as LangGraph's server does it: ``langgraph.json``'s ``"auth": {"path": "./auth.py:auth"}``
names a ``langgraph_sdk.Auth`` object.

* Its ``@auth.authenticate`` handler runs for every request but the open ones (a GET or HEAD of
  ``/ok``, ``/info``, ``/metrics``, ``/docs``, ``/openapi.json`` or the ``/ui`` page; the config's
  own ``http.app`` routes unless ``http.enable_custom_route_auth``): it is called with the parameters it names (``request``,
  ``authorization``, ``headers``, ``path``, ``method``, ``query_params``, ``path_params``, ``scope``,
  ``scopes``, ``user``) and returns the user: a string (the identity), a dict with ``identity``, an
  object with an ``identity``, or ``(permissions, user)``. ``Auth.exceptions.HTTPException`` is
  answered with its status (401 by default); another error is a 500.
* :func:`authorize` runs the most specific ``@auth.on`` handler of an action (``resource.action``,
  then ``resource``, then ``action`` alone, then the global one) with the action's value, which the
  handler may change (routes read it back: a handler adding ``metadata["owner"]`` on create tags the
  resource). ``None`` or ``True`` allows, ``False`` (or an ``AssertionError``) is a 403, and a dict
  is a filter (:mod:`plait.server._auth_filter`) the route applies: another user's resource is a 404
  and is left out of searches and counts.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from starlette.authentication import AuthCredentials
from starlette.datastructures import QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from plait.server._auth_filter import Filter, check_filter
from plait.server._auth_inner import borrowed
from plait.server._config import ConfigError, import_object
from plait.server._http import json_response
from plait.server._wire import as_list

__all__ = [
    "ACTIONS",
    "AUTH_SCOPE",
    "AuthUser",
    "Authenticate",
    "Identity",
    "LoadedAuth",
    "USER_KEYS",
    "authorize",
    "authorize_as",
    "load_auth",
    "read_auth",
    "request_identity",
]

_log = logging.getLogger("plait.server")

AUTH_SCOPE = "plait.auth"
"""The ASGI scope key holding the server's :class:`LoadedAuth` (set by :class:`Authenticate`)."""
_PARAMETERS = frozenset(
    {
        "request",
        "authorization",
        "headers",
        "path",
        "method",
        "query_params",
        "path_params",
        "scope",
        "scopes",
        "user",
    }
)
_OPEN = frozenset({"/ok", "/info", "/metrics", "/docs", "/openapi.json"})
_OPEN_GET = frozenset({"/ui", "/ui/"})
ACTIONS: dict[str, tuple[str, ...]] = {
    "threads": ("create", "read", "update", "delete", "search", "create_run"),
    "assistants": ("create", "read", "update", "delete", "search"),
    "crons": ("create", "read", "update", "delete", "search"),
    "store": ("put", "get", "search", "delete", "list_namespaces"),
}
"""Every (resource, action) the server asks the handlers about."""


class AuthUser:
    """The user ``@auth.authenticate`` returned, with LangGraph's defaults: ``identity`` (required),
    ``is_authenticated`` (``True``), ``display_name`` (the identity) and ``permissions``; any other
    field of the user is read as an attribute or an item (``user.org`` or ``user["org"]``)."""

    __slots__ = ("_permissions", "_user")

    def __init__(self, user: Any, permissions: list[str] | None = None) -> None:
        self._user: Any = user
        self._permissions = list(permissions or [])

    def _field(self, name: str) -> Any:
        fields = _mapping(self._user)
        if fields is not None:
            return fields[name]
        try:
            return getattr(self._user, name)
        except AttributeError:
            raise KeyError(name) from None

    @property
    def identity(self) -> str:
        """Who the user is (runs get it as ``langgraph_auth_user_id``)."""
        return str(self._field("identity"))

    @property
    def is_authenticated(self) -> bool:
        """``True`` unless the user says otherwise."""
        return bool(self.get("is_authenticated", True))

    @property
    def display_name(self) -> str:
        """The user's name to show (its identity unless it has one)."""
        return str(self.get("display_name", self.identity))

    @property
    def permissions(self) -> list[str]:
        """The user's permissions (those authentication returned)."""
        return list(self.get("permissions", self._permissions))

    def dict(self) -> builtins.dict[str, object]:
        """The user as a JSON-able dict (what a run gets as ``langgraph_auth_user``)."""
        fields = _mapping(self._user)
        if fields is None and callable(dump := getattr(self._user, "model_dump", None)):
            fields = _mapping(dump(mode="json"))
        elif fields is None and callable(as_dict := getattr(self._user, "dict", None)):
            fields = _mapping(as_dict())
        extra = builtins.dict(fields or {})
        base = {"identity": self.identity, "is_authenticated": self.is_authenticated}
        return {**base, "display_name": self.display_name, **extra}

    def model_dump(self, **_: Any) -> builtins.dict[str, object]:
        """:meth:`dict` (how the server's JSON encoder writes the user)."""
        return self.dict()

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the user, or ``default``."""
        try:
            return self._field(key)
        except KeyError:
            return default

    def __getitem__(self, key: str) -> Any:
        return self.dict()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.dict()

    def __iter__(self) -> Iterator[str]:
        return iter(self.dict())

    def __len__(self) -> int:
        return len(self.dict())

    def keys(self) -> Any:
        """The user's field names."""
        return self.dict().keys()

    def values(self) -> Any:
        """The user's field values."""
        return self.dict().values()

    def items(self) -> Any:
        """The user's fields."""
        return self.dict().items()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._field(name)
        except KeyError:
            raise AttributeError(f"the user has no field {name!r}") from None

    def __repr__(self) -> str:
        return f"AuthUser({self.identity!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (AuthUser, (self._user, self._permissions))


def _mapping(value: Any) -> Mapping[str, object] | None:
    return cast("Mapping[str, object]", value) if isinstance(value, Mapping) else None


def _user_of(found: Any) -> tuple[AuthUser, list[str]]:
    """The user and permissions ``@auth.authenticate`` returned (LangGraph's accepted shapes)."""
    user: Any = found
    permissions: Any = getattr(found, "permissions", None)
    if isinstance(found, tuple):
        pair = cast("tuple[Any, ...]", found)  # type: ignore[redundant-cast]  # pyright needs it (isinstance leaves the type arguments unknown)
        if len(pair) != 2:
            raise ValueError(
                f"@auth.authenticate returned a tuple of {len(pair)}; return (permissions, user)"
            )
        permissions, user = pair
    elif (fields := _mapping(found)) is not None:
        permissions = fields.get("permissions")
    if isinstance(user, str):
        user = {"identity": user}
    fields = _mapping(user)
    has = "identity" in fields if fields is not None else hasattr(user, "identity")
    if user is None or not has:
        raise ValueError(
            "@auth.authenticate must return the user: its identity (a string), a dict or object with an "
            f"'identity', or (permissions, user); got {type(user).__name__}"
        )
    perms = [str(p) for p in as_list(list(permissions or []))]
    return AuthUser(user, perms), perms


@dataclass
class LoadedAuth:
    """A config's ``Auth`` object, read once: its authenticate handler and its ``@auth.on`` handlers."""

    authenticate: Callable[..., Any]
    handlers: dict[tuple[str, str], Callable[..., Any]]
    fallback: Callable[..., Any] | None
    """The global handler (``@auth.on``), asked when no other one matches."""
    wants: frozenset[str]
    """The parameters ``authenticate`` names."""
    custom_routes: bool = False
    """Whether the config's own routes (``http.app``) are authenticated too."""
    user_routes: BaseRoute | None = None
    chosen: dict[tuple[str, str], Callable[..., Any] | None] = field(default_factory=lambda: {})

    def handler(self, resource: str, action: str) -> Callable[..., Any] | None:
        """The most specific handler of ``resource``/``action`` (``None``: the action is allowed)."""
        key = (resource, action)
        if key not in self.chosen:
            found = None
            for candidate in (key, (resource, "*"), ("*", action), ("*", "*")):
                found = self.handlers.get(candidate)
                if found is not None:
                    break
            self.chosen[key] = found if found is not None else self.fallback
        return self.chosen[key]

    def uncovered(self) -> list[str]:
        """``resource.action`` pairs no handler covers (allowed for everyone), when some handler exists."""
        if self.fallback is not None or not self.handlers:
            return []
        return [f"{r}.{a}" for r, actions in ACTIONS.items() for a in actions if self.handler(r, a) is None]


def load_auth(spec: Mapping[str, object], config_path: str, custom_routes: bool = False) -> LoadedAuth:
    """The ``Auth`` object ``spec["path"]`` names (``./auth.py:auth`` beside the config, or ``module:auth``).

    Raises:
        ConfigError: it cannot be imported, is not a ``langgraph_sdk.Auth``, has no
            ``@auth.authenticate`` handler, or that handler names a parameter plait does not pass.
    """
    target = str(spec["path"])
    if target.rpartition(":")[0].endswith((".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")):
        raise ConfigError(
            f"auth.path: {target} is a JavaScript auth, which plait serve does not run: "
            "write it in Python (from langgraph_sdk import Auth)"
        )
    return read_auth(import_object("auth.path", target, config_path), target, custom_routes)


def read_auth(value: Any, target: str, custom_routes: bool = False) -> LoadedAuth:
    """:func:`load_auth` once the object is imported (``target``: where it came from, for messages)."""
    try:
        from langgraph_sdk import Auth  # noqa: PLC0415 - only a config with "auth" needs it
    except ImportError:
        raise ConfigError(
            "auth: custom auth objects come from langgraph_sdk (from langgraph_sdk import Auth): "
            "pip install langgraph-sdk"
        ) from None
    if not isinstance(value, Auth):
        raise ConfigError(
            f"auth.path: {target} is {type(value).__name__}, not a langgraph_sdk Auth "
            "(auth = Auth() with an @auth.authenticate handler)"
        )
    authenticate: Any = _private(value, "_authenticate_handler")
    if authenticate is None:
        raise ConfigError(
            f"auth.path: {target} has no @auth.authenticate handler; add one: "
            "@auth.authenticate async def authenticate(authorization: str) -> str: ..."
        )
    params = inspect.signature(authenticate).parameters
    unknown = [n for n, p in params.items() if n not in _PARAMETERS and p.default is inspect.Parameter.empty]
    if unknown:
        raise ConfigError(
            f"auth.path: the @auth.authenticate handler takes {unknown}, which plait serve does not pass; "
            f"it passes {sorted(_PARAMETERS)}"
        )
    registered: dict[tuple[str, str], list[Callable[..., Any]]] = _private(value, "_handlers")
    handlers = {key: fns[-1] for key, fns in registered.items()}
    globals_: list[Callable[..., Any]] = _private(value, "_global_handlers")
    loaded = LoadedAuth(
        authenticate,
        handlers,
        globals_[-1] if globals_ else None,
        frozenset(n for n in params if n in _PARAMETERS),
        custom_routes,
    )
    uncovered = loaded.uncovered()
    if uncovered:
        _log.warning(
            "auth: no @auth.on handler covers %s: those actions are allowed for every authenticated user "
            "(add @auth.on to cover everything)",
            ", ".join(uncovered),
        )
    return loaded


def _private(value: Any, name: str) -> Any:
    """An attribute of the SDK's ``Auth`` its own server reads (the registered handlers)."""
    return getattr(value, name)


class _Refused(Exception):
    def __init__(self, status: int, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, dict(headers or {})


def _arguments(auth: LoadedAuth, scope: Scope) -> dict[str, object]:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    found: dict[str, object] = {
        "scope": scope,
        "path": scope["path"],
        "method": scope.get("method", "GET"),  # (a WebSocket's handshake is a GET)
        "headers": dict(headers),
        "query_params": QueryParams(scope.get("query_string", b"")),
        "path_params": scope.get("path_params", {}),
        "scopes": [],
        "user": None,
    }
    if "authorization" in auth.wants:
        raw = dict((k.lower(), v) for k, v in headers).get(b"authorization")
        found["authorization"] = None if raw is None else raw.decode("latin-1")
    if "request" in auth.wants:
        if scope["type"] != "http":  # (as LangGraph's server: a Request is not made of a WebSocket)
            raise _Refused(
                403,
                "the @auth.authenticate handler takes `request`, which a WebSocket does not give: "
                "take `headers`, `authorization` or `scope` instead",
            )
        found["request"] = Request(scope)
    return {name: found[name] for name in auth.wants}


async def _authenticate(auth: LoadedAuth, scope: Scope) -> tuple[AuthUser, list[str]]:
    from langgraph_sdk import Auth  # noqa: PLC0415 - loaded with the config's auth

    kwargs = _arguments(auth, scope)
    try:
        if inspect.iscoroutinefunction(auth.authenticate):
            found = await auth.authenticate(**kwargs)
        else:
            found = await asyncio.to_thread(auth.authenticate, **kwargs)
    except Auth.exceptions.HTTPException as exc:
        raise _Refused(exc.status_code, str(exc.detail), exc.headers) from None
    return _user_of(found)


class Authenticate:
    """ASGI middleware: every request but the open ones (and every WebSocket handshake) is
    authenticated (a refusal is answered with its status and ``{"detail": ...}``; a handshake is
    denied with it, or closed with code 4000 + status where the server cannot); the user and
    permissions go into the scope
    (``scope["user"]``, ``scope["auth"]``), and the auth itself (``scope[AUTH_SCOPE]``) for
    :func:`authorize`."""

    def __init__(self, app: ASGIApp, auth: LoadedAuth) -> None:
        self.app, self.auth = app, auth

    def _open(self, scope: Scope) -> bool:
        path, method = scope["path"], scope.get("method")
        if method == "OPTIONS" or (method in ("GET", "HEAD") and (path in _OPEN or path in _OPEN_GET)):
            return True
        routes = self.auth.user_routes  # (open when the config's own routes answer it: a full match)
        return routes is not None and not self.auth.custom_routes and routes.matches(scope)[0] is Match.FULL

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        scope[AUTH_SCOPE] = self.auth
        lent = borrowed(scope.get("headers", []))  # (an inner call of /mcp or /a2a: its caller's user)
        if lent is not None:
            scope["user"], scope["auth"] = lent
        elif not self._open(scope):
            try:
                user, permissions = await _authenticate(self.auth, scope)
            except _Refused as exc:
                answer = json_response({"detail": exc.detail}, exc.status, exc.headers)
                if scope["type"] == "http":
                    await answer(scope, receive, send)
                    return
                socket = WebSocket(scope, receive, send)  # a handshake refused with the status
                if "websocket.http.response" in scope.get("extensions", {}):
                    await socket.send_denial_response(answer)
                else:
                    await socket.close(code=4000 + exc.status, reason=exc.detail[:120])
                return
            scope["user"], scope["auth"] = user, AuthCredentials(permissions)
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class Identity:
    """Who makes a request (or whose cron makes a run): the user and their permissions."""

    user: AuthUser
    permissions: list[str]


def request_identity(request: HTTPConnection) -> tuple[LoadedAuth, Identity] | None:
    """The server's auth and the request's user, or ``None`` when the server has no custom auth.

    Raises:
        HTTPException: 401, the server has custom auth but the request was not authenticated.
    """
    auth = cast("LoadedAuth | None", request.scope.get(AUTH_SCOPE))
    if auth is None:
        return None
    user = request.scope.get("user")
    if not isinstance(user, AuthUser):
        raise HTTPException(401, "Unauthorized: this route needs an authenticated user")
    credentials = request.scope.get("auth")
    scopes = list(credentials.scopes) if isinstance(credentials, AuthCredentials) else []
    return auth, Identity(user, scopes)


async def authorize(
    request: HTTPConnection, resource: str, action: str, value: dict[str, object]
) -> Filter | None:
    """Ask the server's handlers whether the request's user may do ``action`` on ``resource``.

    ``value`` (the action's ``Auth.types`` dict) is handed to the handler, which may change it: read
    what the action uses back from it. The filter the handler returned (``None``: none, or no
    custom auth) is the caller's to apply.

    Raises:
        HTTPException: 403 when the handler refuses (or its status for ``Auth.exceptions.HTTPException``).
        ApiError: 500 for a handler result that is not ``None``, a bool or a valid filter.
    """
    found = request_identity(request)
    if found is None:
        return None
    return await authorize_as(found[0], found[1], resource, action, value)


async def authorize_as(
    auth: LoadedAuth, who: Identity, resource: str, action: str, value: dict[str, object]
) -> Filter | None:
    """:func:`authorize` for ``who`` (a cron's owner firing its run)."""
    from langgraph_sdk import Auth  # noqa: PLC0415 - loaded with the config's auth

    handler = auth.handler(resource, action)
    if handler is None:
        return None
    ctx = Auth.types.AuthContext(
        permissions=list(who.permissions),
        user=cast("Any", who.user),  # (LangGraph's BaseUser protocol, which the class meets by duck typing)
        resource=cast("Any", resource),
        action=cast("Any", action),
    )
    try:
        result = await handler(ctx=ctx, value=value)
    except Auth.exceptions.HTTPException as exc:
        raise HTTPException(exc.status_code, str(exc.detail), dict(exc.headers or {})) from None
    except AssertionError as exc:
        raise HTTPException(403, str(exc) or "Forbidden") from None
    if result is None or result is True:
        return None
    if result is False:
        raise HTTPException(403, "Forbidden")
    return check_filter(result) or None


USER_KEYS = ("langgraph_auth_user", "langgraph_auth_user_id", "langgraph_auth_permissions")
"""What a run's ``configurable`` says of the user who made it (as LangGraph's server; see
:mod:`plait.server._auth_runs`)."""
