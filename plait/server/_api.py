"""Route declarations: each endpoint says once its method, path, request and response models,
summary and tag; the Starlette routes, the checking of bodies and query strings, and the OpenAPI
document (``GET /openapi.json``, ``GET /docs``: :mod:`plait.server._openapi`) are made from that.

Declaring a resource's endpoints (in the resource's module)::

    from plait.server._api import Api, Body, Query

    api = Api("Threads")  # the tag its operations are listed under


    class ThreadPatch(Body):  # strict JSON types; null = absent; unknown fields ignored
        \"\"\"What a patch of a thread may change.\"\"\"

        metadata: dict[str, object] | None = None


    @api.patch("/threads/{thread_id}", "Patch Thread", body=ThreadPatch, response=Thread)
    async def patch(request: Request, body: ThreadPatch) -> Response:
        ...  # body: checked already; request.path_params as Starlette gives them


    routes = api.routes()  # (the app collects ``api`` itself for the document)

* ``body=``: a :class:`Body` model (or any type pydantic validates, e.g. ``list[RunCreate]``);
  the handler gets it as ``body``. ``body_required=True``: an empty request body is a 422 (else
  an empty or ``null`` body is ``{}``).
* ``query=``: a :class:`Query` model (lax: the query string's text is converted; a ``list``
  field takes the repeated parameter); the handler gets it as ``query``.
* ``response=``: the model (or type) of the 200 answer, for the document only (answers are not
  checked); ``status=`` another success status (204: no content); ``stream=True``: an SSE stream.
* A bad body or query string is a 422 whose ``detail`` names each field's path, what it takes
  and what it got (``supersteps[0].updates[0].as_node: expected a string, got 7``).
* :meth:`Api.describe` lists in the document a route routed elsewhere (no handler here).
* A field's own rule: ``Annotated[str, check(fn)]`` (``fn`` raises ``ValueError`` or
  :class:`ApiError` with its message, reported at the field's path).
* Checking JSON that did not come as a body (a stored request, one an auth handler changed):
  :func:`validated` (``validated(RunCreate, data)``: the model, or a 422 explained alike).
* The app lists each module's ``api`` in ``plait.server._app._documented()``; a test
  (tests/server/test_openapi.py) fails on a route served but not listed, or listed but not served.

Handlers stay plain ``async def (request, body=..., query=...) -> Response`` functions, callable
directly; the decorator returns them unchanged. Path parameters stay in ``request.path_params``
(their documented types come from their names: ``thread_id``, ``run_id``, ``cron_id`` are UUIDs).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.server._wire import ApiError, loads

__all__ = [
    "Api",
    "Body",
    "Endpoint",
    "Handler",
    "Query",
    "check",
    "explain",
    "parse_body",
    "parse_query",
    "validated",
]

Handler = Callable[..., Awaitable[Response]]
_H = TypeVar("_H", bound=Handler)
_T = TypeVar("_T")


class Body(BaseModel):
    """A JSON request body: strict JSON types (``"10"`` is no integer), unknown fields ignored
    (as LangGraph's server does; a model may forbid them with ``extra="forbid"``)."""

    model_config = ConfigDict(strict=True, extra="ignore")


class Query(BaseModel):
    """Query parameters: their text converted to each field's type, unknown ones ignored."""

    model_config = ConfigDict(extra="ignore")


@dataclass
class Endpoint:
    """One declared operation (see the module's docstring)."""

    method: str
    path: str
    summary: str
    tag: str
    handler: Handler | None
    body: Any = None
    query: type[Query] | None = None
    response: Any = None
    status: int = 200
    stream: bool = False
    body_required: bool = False
    media: str = "application/json"
    description: str = ""
    adapter: TypeAdapter[Any] | None = field(default=None, repr=False)

    def route(self) -> Route:
        """The Starlette route: checks the body and query string, then calls the handler."""
        handler = self.handler
        if handler is None:
            raise ValueError(f"{self.method} {self.path} is described only; it has no handler")

        async def endpoint(request: Request) -> Response:
            kwargs: dict[str, object] = {}
            if self.adapter is not None:
                kwargs["body"] = await parse_body(request, self.adapter, required=self.body_required)
            if self.query is not None:
                kwargs["query"] = parse_query(request, self.query)
            return await handler(request, **kwargs)

        endpoint.__name__ = handler.__name__
        endpoint.__doc__ = handler.__doc__
        return Route(
            self.path, endpoint, methods=[self.method], name=f"{handler.__module__}.{handler.__name__}"
        )


class Api:
    """The endpoints of one resource (``tag``: the group the document lists them under)."""

    def __init__(self, tag: str, description: str = "") -> None:
        self.tag, self.description = tag, description
        self.endpoints: list[Endpoint] = []

    def endpoint(  # noqa: PLR0913 - the parts of a declaration
        self,
        method: str,
        path: str,
        summary: str,
        *,
        body: Any = None,
        query: type[Query] | None = None,
        response: Any = None,
        status: int = 200,
        stream: bool = False,
        body_required: bool = False,
        media: str = "application/json",
        description: str = "",
    ) -> Callable[[_H], _H]:
        """Declare ``method path`` served by the decorated handler."""

        def declare(handler: _H) -> _H:
            self.endpoints.append(
                Endpoint(
                    method,
                    path,
                    summary,
                    self.tag,
                    handler,
                    body,
                    query,
                    response,
                    status,
                    stream,
                    body_required,
                    media,
                    description or inspect.getdoc(handler) or "",
                    None if body is None else TypeAdapter(body),
                )
            )
            return handler

        return declare

    def get(self, path: str, summary: str, **options: Any) -> Callable[[_H], _H]:
        """Declare ``GET path`` (options as :meth:`endpoint`)."""
        return self.endpoint("GET", path, summary, **options)

    def post(self, path: str, summary: str, **options: Any) -> Callable[[_H], _H]:
        """Declare ``POST path``."""
        return self.endpoint("POST", path, summary, **options)

    def put(self, path: str, summary: str, **options: Any) -> Callable[[_H], _H]:
        """Declare ``PUT path``."""
        return self.endpoint("PUT", path, summary, **options)

    def patch(self, path: str, summary: str, **options: Any) -> Callable[[_H], _H]:
        """Declare ``PATCH path``."""
        return self.endpoint("PATCH", path, summary, **options)

    def delete(self, path: str, summary: str, **options: Any) -> Callable[[_H], _H]:
        """Declare ``DELETE path``."""
        return self.endpoint("DELETE", path, summary, **options)

    def describe(  # noqa: PLR0913 - the parts of a declaration
        self,
        method: str,
        path: str,
        summary: str,
        *,
        body: Any = None,
        query: type[Query] | None = None,
        response: Any = None,
        status: int = 200,
        body_required: bool = False,
        media: str = "application/json",
        description: str = "",
    ) -> None:
        """List in the document an operation routed elsewhere (its handler is not declared here)."""
        self.endpoints.append(
            Endpoint(
                method, path, summary, self.tag, None, body, query, response, status, False,
                body_required, media, description,
            )
        )  # fmt: skip

    def routes(self) -> list[Route]:
        """The Starlette routes of the declared handlers, in declaration order (a fixed path
        such as ``/threads/search`` is declared before ``/threads/{thread_id}``)."""
        return [e.route() for e in self.endpoints if e.handler is not None]


# -- checking requests -----------------------------------------------------------------------


def check(fn: Callable[[Any], Any]) -> AfterValidator:
    """A field validator (``Annotated[T, check(fn)]``) from a function that raises :class:`ApiError`
    or ``ValueError`` with its own message (reported at the field's path); ``None`` is not passed."""

    def run(value: Any) -> Any:
        if value is None:
            return None
        try:
            return fn(value)
        except ApiError as exc:
            raise ValueError(exc.detail) from None

    return AfterValidator(run)


async def parse_body(request: Request, adapter: TypeAdapter[Any], *, required: bool = False) -> Any:
    """The request's JSON body validated by ``adapter``.

    Raises:
        ApiError: 422, a body that is not JSON, missing while ``required``, or not what ``adapter``
            takes (:func:`explain` says what and where).
    """
    raw = await request.body()
    if not raw.strip():
        if required:
            raise ApiError(422, "a JSON request body is required")
        data: Any = {}
    else:
        try:
            data = loads(raw)
        except ValueError:
            raise ApiError(422, "Invalid JSON in request body") from None
        if data is None:
            data = {}
    try:
        return adapter.validate_python(data, strict=True)
    except ValidationError as exc:
        raise ApiError(422, explain(exc.errors(), "the request body")) from None


def validated(kind: type[_T], data: Any, whole: str = "the request body") -> _T:
    """``data`` (a request's JSON, as a handler or the config's auth left it) checked as ``kind``.

    Raises:
        ApiError: 422, as a bad request body (``whole``: what the entire value is called).
    """
    try:
        if issubclass(kind, BaseModel):
            return kind.model_validate(data, strict=True)
        return TypeAdapter(kind).validate_python(data, strict=True)
    except ValidationError as exc:
        raise ApiError(422, explain(exc.errors(), whole)) from None


def parse_query(request: Request, model: type[Query]) -> Any:
    """The request's query parameters as ``model`` (a ``list`` field takes every repetition).

    Raises:
        ApiError: 422 naming each parameter that is not what ``model`` takes.
    """
    params = request.query_params
    data: dict[str, object] = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key not in params:
            continue
        data[name] = params.getlist(key) if _is_list(info.annotation) else params[key]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiError(422, explain(exc.errors(), "the query string", "query parameter ")) from None


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is list:
        return True
    if origin is typing.Union or origin is types.UnionType:
        return any(_is_list(a) for a in typing.get_args(annotation))
    return False


# -- explaining validation errors ----------------------------------------------------------

_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
    "none_required": "null",
    "uuid_type": "a UUID",
    "uuid_parsing": "a UUID",
    "missing": "a value (required)",
}
_BOUNDS = {
    "greater_than": "a number > {gt}",
    "greater_than_equal": "a number >= {ge}",
    "less_than": "a number < {lt}",
    "less_than_equal": "a number <= {le}",
    "too_short": "at least {min_length} item(s)",
    "too_long": "at most {max_length} item(s)",
    "string_too_short": "a string of at least {min_length} character(s)",
    "string_too_long": "a string of at most {max_length} character(s)",
}
_SCALAR_TAGS = frozenset({"str", "int", "float", "bool", "none", "bytes", "dict", "list"})


def _is_tag(part: str | int) -> bool:
    """Whether a part of an error's location may be a union member's label (``str``, ``list[str]``,
    ``literal['*']``, ``constrained-float``, a model's class name) rather than a field's name."""
    return isinstance(part, str) and (
        "[" in part or "-" in part or part in _SCALAR_TAGS or part[:1].isupper()
    )


def _where(loc: Sequence[str | int], whole: str, prefix: str) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return prefix + text if text else whole


def _expected(error: ErrorDetails) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in ("literal_error", "enum"):
        return f"one of {ctx.get('expected')}"
    if kind in _BOUNDS:
        return _BOUNDS[kind].format(**ctx)
    return _EXPECTED.get(kind, error["msg"].removeprefix("Input should be ").lower())


def _got(error: ErrorDetails) -> str:
    if error["type"] == "missing":
        return "nothing"
    text = repr(error["input"])
    return text if len(text) <= 80 else text[:77] + "..."


def _line(loc: Sequence[str | int], errors: list[ErrorDetails], whole: str, prefix: str) -> str:
    where = _where(loc, whole, prefix)
    first = errors[0]
    if first["type"] in ("value_error", "assertion_error"):  # a validator's own message
        message = str((first.get("ctx") or {}).get("error") or first["msg"])
        return f"{where}: {message}"
    if first["type"] == "extra_forbidden":
        return f"{where}: not a field this request takes"
    expected = " or ".join(dict.fromkeys(_expected(e) for e in errors))
    return f"{where}: expected {expected}, got {_got(first)}"


Loc = tuple[str | int, ...]


def _lines(errors: list[tuple[Loc, ErrorDetails]], whole: str, prefix: str, start: int = 0) -> list[str]:
    """One line per field; a union's members (their labels in the locations, from ``start`` on)
    explained together: by the member the value had the shape of, when it failed deeper inside,
    else as one line of what each member expected."""
    out: list[str] = []
    plain: dict[Loc, list[ErrorDetails]] = {}
    unions: dict[Loc, dict[str | int, list[tuple[Loc, ErrorDetails]]]] = {}
    for loc, error in errors:
        at = next((i for i in range(start, len(loc)) if _is_tag(loc[i])), None)
        if at is None:
            plain.setdefault(loc, []).append(error)
        else:
            unions.setdefault(loc[:at], {}).setdefault(loc[at], []).append((loc, error))
    out += [_line(loc, errs, whole, prefix) for loc, errs in plain.items()]
    for base, labelled in unions.items():
        if len(labelled) == 1:  # one label only: a dict's key, not a union's members
            out += _lines(next(iter(labelled.values())), whole, prefix, len(base) + 1)
            continue
        cut = len(base)
        members = [[((*loc[:cut], *loc[cut + 1 :]), e) for loc, e in m] for m in labelled.values()]
        deeper = [m for m in members if all(len(loc) > cut for loc, _ in m)]
        if deeper:  # the value had this member's shape: its inner errors say what is wrong
            out += _lines(max(deeper, key=lambda m: min(len(loc) for loc, _ in m)), whole, prefix, cut)
        else:
            out.append(_line(base, [e for m in members for loc, e in m if len(loc) == cut], whole, prefix))
    return out


def explain(errors: Sequence[ErrorDetails], whole: str, prefix: str = "") -> str:
    """pydantic's errors as one message: ``field.path[0].name: expected ..., got ...`` per field,
    joined with ``"; "`` (``whole``: what an error of the entire value is called)."""
    return "; ".join(_lines([(tuple(e["loc"]), e) for e in errors], whole, prefix))
