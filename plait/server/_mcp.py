"""``/mcp``: the assistants as MCP tools, over MCP's Streamable HTTP transport.

The protocol is the ``mcp`` SDK's low-level server in stateless, JSON-response mode (as LangGraph's
server answers: no MCP sessions, each POST answered with one JSON body); plait supplies its two
handlers:

* ``tools/list``: an assistant is a tool named after it (its name in MCP's tool-name alphabet; of
  several assistants with one name the first listed is the tool), described by its description,
  taking its graph's input schema (a list-of-messages key is simplified to a message text, as
  LangGraph's server shows it). Pages of 100, the cursor is the offset.
* ``tools/call``: the arguments are checked against that schema (wrong types and unknown keys are a
  tool error naming them; no key is required, since a graph's input is a partial state update),
  then the assistant runs as a stateless ``POST /runs/wait``; its output is the tool's result (JSON
  text, and as structured content when it is an object), a run's error is a tool error.

Both go through the API itself (requests into this app carrying the caller's headers), so the auth
that guards ``/assistants/search``, ``/assistants/{id}/schemas`` and ``/runs/wait`` guards the tools.
``http.disable_mcp`` in the config turns the endpoint off.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any, cast

import mcp.types as types
import orjson
from jsonschema import validators
from jsonschema.exceptions import SchemaError, ValidationError
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from plait.server._api import Api
from plait.server._http import json_response
from plait.server._inner import InnerApi, InnerError, detail_of
from plait.server._wire import as_dict, as_list

__all__ = ["McpEndpoint", "simplified_schema", "tool_name"]

PAGE = 100
_NAME_SPACES = re.compile(r"\s+")
_NAME_INVALID = re.compile(r"[^A-Za-z0-9_.\-]")
_MESSAGE_TYPES = frozenset(
    f"{kind}{suffix}"
    for kind in ("AI", "Human", "Chat", "System", "Function", "Tool")
    for suffix in ("Message", "MessageChunk")
)
_NO_GET = "Method Not Allowed: this server sends no messages of its own (POST a JSON-RPC request)"
_ANNOTATIONS = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)


def tool_name(name: str) -> str:
    """An assistant's name as an MCP tool name (``[A-Za-z0-9_.-]``, 128 characters at most)."""
    return _NAME_INVALID.sub("", _NAME_SPACES.sub("_", name.strip()))[:128]


def _refs(node: Any, found: set[str]) -> None:
    """Add the names of the definitions ``node`` refers to (``#/$defs/NAME``) to ``found``."""
    for key, value in as_dict(node).items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            found.add(value.removeprefix("#/$defs/"))
        else:
            _refs(value, found)
    for item in as_list(node):
        _refs(item, found)


def _is_messages(spec: Any) -> bool:
    """Whether a property is a list of LangChain messages (``items`` one of the message classes)."""
    if as_dict(spec).get("type") != "array":
        return False
    items = as_dict(as_dict(spec).get("items"))
    choices: Any = items.get("oneOf") or items.get("anyOf")
    refs: set[str] = set()
    _refs(choices, refs)
    return bool(refs & _MESSAGE_TYPES)


def simplified_schema(schema: dict[str, object] | None) -> tuple[dict[str, object], frozenset[str]]:
    """A graph's input schema as a tool's: each list-of-messages property becomes a message text
    (the definitions only they used dropped), the root an object. Also the names of those properties."""
    out: dict[str, object] = dict(schema or {})
    out.setdefault("type", "object")
    props: dict[str, object] = dict(as_dict(out.get("properties")))
    messages = frozenset(k for k, v in props.items() if _is_messages(v))
    if not messages:
        return out, messages
    for key in messages:
        title = as_dict(props[key]).get("title", key) if isinstance(props[key], dict) else key
        props[key] = {
            "type": "string",
            "title": title,
            "description": "The user message to send to the agent.",
        }
    out["properties"] = props
    defs: dict[str, object] = dict(as_dict(out.get("$defs")))
    used: set[str] = set()
    _refs({k: v for k, v in out.items() if k != "$defs"}, used)
    pending = list(used)
    while pending:  # definitions reachable from what is left
        inner: set[str] = set()
        _refs(defs.get(pending.pop()), inner)
        pending.extend(inner - used)
        used |= inner
    kept = {k: v for k, v in defs.items() if k in used}
    if kept:
        out["$defs"] = kept
    else:
        out.pop("$defs", None)
    return out, messages


def _argument_errors(
    schema: dict[str, object], messages: frozenset[str], arguments: dict[str, object]
) -> list[str]:
    """What is wrong with a tool call's arguments (empty: nothing)."""
    props = as_dict(schema.get("properties"))
    errors: list[str] = []
    if props and schema.get("additionalProperties") is not True:
        for key in sorted(set(arguments) - set(props)):
            errors.append(f"unknown argument {key!r} (the tool takes {', '.join(sorted(props))})")
    for key in sorted(messages & set(arguments)):
        if not isinstance(arguments[key], (str, list, dict)):
            errors.append(
                f"{key}: must be a message text or a list of messages like "
                f'{{"role": "user", "content": "..."}}, got {type(arguments[key]).__name__}'
            )
    # (JSON parsed from the request; jsonschema types its instance as JSON values)
    checked: dict[str, Any] = {k: v for k, v in arguments.items() if k in props and k not in messages}
    checking: dict[str, object] = {**schema, "required": [], "additionalProperties": True}
    checking["properties"] = {k: v for k, v in props.items() if k not in messages}
    try:
        validator = validators.validator_for(checking)(checking)
        found: list[ValidationError] = list(validator.iter_errors(checked))
    except SchemaError:  # a graph schema the validator cannot read: the graph checks its input itself
        return errors
    for error in sorted(found, key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in error.absolute_path) or "arguments"
        errors.append(f"{where}: {error.message}")
    return errors


def _request(ctx: ServerRequestContext[Any, Any]) -> Request:
    request: Any = ctx.request
    if not isinstance(request, Request):  # (the Streamable HTTP transport always attaches it)
        raise MCPError(types.INTERNAL_ERROR, "the MCP request carries no HTTP request")
    return cast("Request", request)


async def _assistants(api: InnerApi, offset: int, limit: int) -> list[dict[str, object]]:
    try:
        found = await api.ok("POST", "/assistants/search", {"limit": limit, "offset": offset})
    except InnerError as exc:  # (an auth refusal, say): the MCP request's error, naming it
        raise MCPError(
            types.INTERNAL_ERROR if exc.status >= 500 else types.INVALID_REQUEST, exc.detail
        ) from None
    return [as_dict(a) for a in as_list(found) if isinstance(a, dict)]


async def _tool_schema(
    api: InnerApi, assistant: dict[str, object]
) -> tuple[dict[str, object], frozenset[str]] | None:
    status, schemas, _ = await api.call("GET", f"/assistants/{assistant['assistant_id']}/schemas")
    raw: Any = as_dict(schemas).get("input_schema") if status == 200 else None
    return simplified_schema(as_dict(raw)) if isinstance(raw, dict) else None


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    cursor = params.cursor if params is not None else None
    offset = int(cursor) if cursor is not None and cursor.isdigit() else 0
    tools: list[types.Tool] = []
    seen: set[str] = set()
    async with InnerApi(_request(ctx)) as api:
        page = await _assistants(api, offset, PAGE)
        for assistant in page:
            name = tool_name(str(assistant.get("name") or assistant["graph_id"]))
            if not name or name in seen:
                continue
            seen.add(name)
            found = await _tool_schema(api, assistant)
            if found is None:  # a graph whose input pydantic cannot describe: no tool
                continue
            description = assistant.get("description") or f"Runs the {assistant['name']} assistant"
            tools.append(
                types.Tool(
                    name=name,
                    title=str(assistant.get("name") or name),
                    description=str(description),
                    input_schema=found[0],
                    annotations=_ANNOTATIONS,
                )
            )
    next_cursor = str(offset + PAGE) if len(page) == PAGE else None
    return types.ListToolsResult(tools=tools, next_cursor=next_cursor)


async def _find(api: InnerApi, name: str) -> dict[str, object]:
    offset = 0
    while True:
        page = await _assistants(api, offset, PAGE)
        for assistant in page:
            if tool_name(str(assistant.get("name") or assistant["graph_id"])) == name:
                return assistant
        if len(page) < PAGE:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name!r} (tools/list names the tools)")
        offset += PAGE


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    arguments: dict[str, object] = dict(params.arguments or {})
    async with InnerApi(_request(ctx)) as api:
        assistant = await _find(api, params.name)
        found = await _tool_schema(api, assistant)
        if found is not None:
            errors = _argument_errors(*found, arguments)
            if errors:
                return _error_result(f"Invalid arguments for tool {params.name!r}: " + "; ".join(errors))
        run: dict[str, object] = {"assistant_id": assistant["assistant_id"], "input": arguments}
        extra: dict[str, object] = params.model_extra or {}
        if isinstance(extra.get("context"), dict):  # (LangGraph's server reads a call's context here too)
            run["context"] = extra["context"]
        status, output, _ = await api.call("POST", "/runs/wait", run)
    if status >= 400:
        return _error_result(f"The run of {params.name!r} was refused: {detail_of(output, status)}")
    if "__error__" in as_dict(output):
        error: Any = as_dict(output)["__error__"]
        if isinstance(error, dict):
            failure = as_dict(error)
            return _error_result(
                f"{failure.get('error', 'Error')}: {failure.get('message', '')}".rstrip(": ")
            )
        return _error_result(str(error))
    text = orjson.dumps(output).decode()
    structured = as_dict(output) if isinstance(output, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def _plait_version() -> str:
    try:
        return version("plait")
    except PackageNotFoundError:
        return "unknown"


class McpEndpoint:
    """The ``/mcp`` route, its description (``api``, for ``/openapi.json``) and the MCP SDK's request
    manager that serves it (run in the app's lifespan).

    Args:
        max_body: The server's request body limit (the SDK applies its own, set to this).
    """

    def __init__(self, max_body: int) -> None:
        server: Server[Any] = Server(
            "plait", version=_plait_version(), on_list_tools=_list_tools, on_call_tool=_call_tool
        )
        # Host and Origin checks are the server's own (Guard), for every route alike
        self.manager = StreamableHTTPSessionManager(
            app=server, json_response=True, stateless=True, max_request_body_size=max_body
        )
        self._sdk = StreamableHTTPASGIApp(self.manager)
        # (this object is an ASGI app, not a function: Starlette hands it the raw request)
        self.routes = [Route("/mcp", self, methods=["GET", "POST", "DELETE"])]
        self.api = Api("MCP", "The assistants as Model Context Protocol tools (Streamable HTTP transport).")
        self.api.describe(
            "POST",
            "/mcp",
            "MCP Post",
            body=dict[str, object],
            body_required=True,
            response={
                "type": "object",
                "description": "The JSON-RPC response (202, no body, to a notification).",
            },
            description=(
                "A JSON-RPC 2.0 message of the Model Context Protocol (`initialize`, `tools/list`, `tools/call`, "
                "`ping`), answered with one JSON body; stateless: no session. Each assistant is a tool taking its "
                "graph's input; calling it runs the assistant without a thread and returns its output. The "
                "Accept header must name application/json and text/event-stream."
            ),
        )

        for method, summary, why in (
            ("GET", "MCP Get", "this stateless server opens no stream of its own"),
            ("DELETE", "Terminate Session", "this stateless server has no session to end"),
        ):  # (routed as the transport has them; answered 405)
            self.api.describe(
                method,
                "/mcp",
                summary,
                status=405,
                response={"type": "object", "description": f"A JSON-RPC error: {why}."},
                description=f"Answered 405 (a JSON-RPC error): {why}; POST JSON-RPC requests.",
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request to ``/mcp``."""
        if scope["method"] == "GET":  # a stateless server has nothing to push: no stream to open
            body = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": types.INVALID_REQUEST, "message": _NO_GET},
            }
            await json_response(body, 405, {"Allow": "POST, DELETE"})(scope, receive, send)
            return
        await self._sdk(scope, receive, send)

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None, None]:
        """Serve MCP requests until the context ends."""
        async with self.manager.run():
            yield
