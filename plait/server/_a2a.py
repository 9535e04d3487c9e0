"""``/a2a/{assistant_id}``: an assistant as an Agent2Agent (A2A) agent, over A2A's JSON-RPC binding.

As LangGraph's server maps them: an A2A context is a thread (``contextId`` = thread id, a new one
when the message names none), a task is a run on it (``taskId`` = ``"{thread_id}:{run_id}"``; a
message answering a task that waits for input resumes the interrupted thread, as the same task).

* ``SendMessage`` (``message/send``): the message's text parts are the graph's input ``messages``
  (the graph's input must have that key), its data parts more input keys; the assistant runs on
  the thread and the answer is the task: its state, the thread's messages as ``history``
  (``configuration.historyLength`` keeps the last N), the last AI message as the response artifact
  (the interrupts as an ``Interrupt`` artifact when it waits for input).
* ``SendStreamingMessage`` (``message/stream``): the same as server-sent events: the submitted
  task, ``working`` status updates (with each AI message), then the artifact and the final status.
* ``GetTask`` (``tasks/get``) and ``CancelTask`` (``tasks/cancel``: a pending or running run).
* The agent card: ``GET /a2a/{id}``, ``/a2a/{id}/.well-known/agent-card.json`` (or ``agent.json``),
  ``/.well-known/agent-card.json?assistant_id=``.

A1.0 method names (``SendMessage``) are answered in A2A 1.0's JSON (``TASK_STATE_COMPLETED``,
``ROLE_AGENT``, stream results wrapped as ``{"statusUpdate": …}``); 0.3 names (``message/send``) in
0.3's (``completed``, ``agent``, results carrying their ``kind``). Everything goes through the API
with the caller's headers (:mod:`plait.server._inner`), so the server's auth applies.
``http.disable_a2a`` turns the routes off. Not implemented (a JSON-RPC error naming them):
``ListTasks``, ``GetExtendedAgentCard``, push notifications, resubscription, file parts,
cancelling a task that waits for input.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import Field
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from plait.server._a2a_wire import (
    TERMINAL,
    Fail,
    accepts,
    agent_message,
    interrupt_artifact,
    now,
    outcome,
    reply_artifact,
    run_input,
    said,
    status_update,
    task_doc,
    task_state,
    to_wire,
)
from plait.server._api import Api, Query
from plait.server._http import json_response
from plait.server._inner import InnerApi, InnerError
from plait.server._wire import ApiError, as_dict, as_list, check_uuid, dumps, loads

__all__ = ["api", "routes"]

api = Api("A2A", "Each assistant as an Agent2Agent (A2A) agent: JSON-RPC and agent cards.")
_CARD = {"type": "object", "description": "The assistant's A2A agent card."}

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
TASK_NOT_FOUND, TASK_NOT_CANCELABLE, UNSUPPORTED = -32001, -32002, -32004
_LEGACY = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
}
_UNIMPLEMENTED = frozenset(
    {
        "ListTasks",
        "GetExtendedAgentCard",
        "SubscribeToTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
        "agent/getAuthenticatedExtendedCard",
    }
)


def _error(code: int, message: str, rpc_id: Any = None) -> Response:
    """A JSON-RPC error (HTTP 200, as JSON-RPC over HTTP answers them)."""
    return json_response({"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}})


async def _assistant(api: InnerApi, assistant_id: str) -> dict[str, object]:
    status, found, _ = await api.call("GET", f"/assistants/{assistant_id}")
    if status in (404, 422):  # (422: neither an assistant id nor a graph id)
        raise Fail(INVALID_PARAMS, f"Assistant {assistant_id} not found (an assistant id or a graph id)", 404)
    if status >= 400:
        raise Fail(
            INTERNAL_ERROR if status >= 500 else INVALID_REQUEST, str(as_dict(found).get("detail", found))
        )
    return as_dict(found)


async def _input_keys(api: InnerApi, assistant_id: str) -> set[str]:
    _, schemas, _ = await api.call("GET", f"/assistants/{assistant_id}/schemas")
    return set(as_dict(as_dict(as_dict(schemas).get("input_schema")).get("properties")))


class _Task:
    """A task found: its context (thread), its latest run, the thread."""

    def __init__(self, task_id: str, context: str, run: dict[str, object], thread: dict[str, object]) -> None:
        self.task_id, self.context, self.run, self.thread = task_id, context, run, thread

    @property
    def state(self) -> str:
        return task_state(str(self.run.get("status")), str(self.thread.get("status")))


async def _find_task(api: InnerApi, task_id: Any, assistant_id: str, context: Any = None) -> _Task:
    """The task ``task_id`` of this assistant, or a ``TaskNotFound`` error."""
    if not isinstance(task_id, str) or not task_id:
        raise Fail(INVALID_PARAMS, "the task id (params.id, or message.taskId) must be a non-empty string")
    thread_id, _, run_id = task_id.rpartition(":")
    thread_id = thread_id or (context if isinstance(context, str) else "")
    if thread_id:  # (a path segment of the inner calls: a UUID only)
        try:
            thread_id = check_uuid(thread_id, "thread id of the task id (taskId is '<thread id>:<run id>')")
        except ApiError as exc:
            raise Fail(INVALID_PARAMS, f"{exc.detail}, in task id {task_id!r}") from None
    status, thread, _ = await api.call("GET", f"/threads/{thread_id}") if thread_id else (404, None, None)
    if status >= 400:
        raise Fail(TASK_NOT_FOUND, f"Task not found: {task_id}")
    runs = as_list(await api.ok("GET", f"/threads/{thread_id}/runs?limit=1000"))
    mine = [
        as_dict(r)
        for r in runs
        if as_dict(r).get("assistant_id") == assistant_id
        and (
            as_dict(r).get("run_id") == run_id
            or as_dict(as_dict(r).get("metadata")).get("a2a_task_id") == task_id
        )
    ]
    if not mine:
        raise Fail(TASK_NOT_FOUND, f"Task not found: {task_id}")
    latest = max(mine, key=lambda r: (str(r.get("created_at")), str(r.get("run_id"))))
    return _Task(f"{thread_id}:{run_id}", thread_id, latest, as_dict(thread))


class _Plan:
    """What a message asks: the run to make (its thread and body) and the task it belongs to."""

    def __init__(
        self, context: str, task_id: str | None, body: dict[str, object], message: dict[str, object]
    ) -> None:
        self.context, self.task_id, self.body, self.message = context, task_id, body, message


def _history_length(params: dict[str, object]) -> int | None:
    length = as_dict(params.get("configuration")).get("historyLength")
    if length is not None and (not isinstance(length, int) or isinstance(length, bool) or length < 0):
        raise Fail(INVALID_PARAMS, f"configuration.historyLength must be an integer >= 0, got {length!r}")
    return length


async def _plan(api: InnerApi, assistant: dict[str, object], params: dict[str, object]) -> _Plan:
    message = params.get("message")
    if not isinstance(message, dict) or not message:
        raise Fail(INVALID_PARAMS, "params.message must be an A2A message (messageId, role, parts)")
    message = as_dict(message)
    aid = str(assistant["assistant_id"])
    made, resume = run_input(message, await _input_keys(api, aid), str(assistant.get("name") or aid))
    body: dict[str, object] = {"assistant_id": aid, "if_not_exists": "create"}
    if isinstance(params.get("context"), dict):  # (LangGraph's server reads a run context here too)
        body["context"] = params["context"]
    task_id, context = message.get("taskId"), message.get("contextId")
    if task_id is not None:
        task = await _find_task(api, task_id, aid, context)
        if task.state in TERMINAL:
            raise Fail(UNSUPPORTED, f"Task {task_id} is {task.state}: a terminal task takes no more messages")
        body["metadata"] = {"a2a_task_id": task.task_id}
        body["command" if task.state == "TASK_STATE_INPUT_REQUIRED" else "input"] = (
            {"resume": resume} if task.state == "TASK_STATE_INPUT_REQUIRED" else made
        )
        return _Plan(task.context, task.task_id, body, message)
    if context is not None:
        try:
            context = str(uuid.UUID(str(context)))
        except ValueError:
            raise Fail(INVALID_PARAMS, f"contextId must be a UUID (a thread id), got {context!r}") from None
    body["input"] = made
    return _Plan(context or str(uuid.uuid4()), None, body, message)


def _run_id(headers: Any) -> str:
    location = str(headers.get("content-location", ""))
    return location.rstrip("/").rpartition("/")[2]


def _refused(exc: InnerError) -> Fail:
    return Fail(INVALID_PARAMS if exc.status < 500 else INTERNAL_ERROR, exc.detail)


async def _send(api: InnerApi, assistant: dict[str, object], params: dict[str, object]) -> dict[str, object]:
    length = _history_length(params)
    plan = await _plan(api, assistant, params)
    status, output, headers = await api.call("POST", f"/threads/{plan.context}/runs/wait", plan.body)
    if status >= 400:
        raise _refused(InnerError(status, str(as_dict(output).get("detail", output))))
    task_id = plan.task_id or f"{plan.context}:{_run_id(headers)}"
    state, error = outcome(output)
    values = output
    if state == "TASK_STATE_FAILED":  # (the output is the error: the history is the thread's)
        values = as_dict(await api.ok("GET", f"/threads/{plan.context}")).get("values")
    return task_doc(task_id, plan.context, values, state, length, str(assistant["assistant_id"]), error)


async def _get(api: InnerApi, assistant: dict[str, object], params: dict[str, object]) -> dict[str, object]:
    length = _history_length({"configuration": params})
    task = await _find_task(api, params.get("id"), str(assistant["assistant_id"]), params.get("contextId"))
    values = as_dict(task.thread.get("values"))
    interrupts = [i for group in as_dict(task.thread.get("interrupts")).values() for i in as_list(group)]
    if interrupts:
        values = {**values, "__interrupt__": interrupts}
    error = ""
    if task.state == "TASK_STATE_FAILED":
        error = "The run failed (its error is in the run's stream and the server's log)"
    return task_doc(
        task.task_id, task.context, values, task.state, length, str(assistant["assistant_id"]), error
    )


async def _cancel(
    api: InnerApi, assistant: dict[str, object], params: dict[str, object]
) -> dict[str, object]:
    task = await _find_task(api, params.get("id"), str(assistant["assistant_id"]), params.get("contextId"))
    if task.state in TERMINAL:
        raise Fail(TASK_NOT_CANCELABLE, f"Task {task.task_id} is {task.state}: not cancelable")
    if task.state == "TASK_STATE_INPUT_REQUIRED":
        raise Fail(
            UNSUPPORTED, "Cancelling a task that waits for input is not implemented: answer it instead"
        )
    path = f"/threads/{task.context}/runs/{task.run['run_id']}/cancel?wait=true&action=interrupt"
    try:
        await api.ok("POST", path)
    except InnerError as exc:
        raise _refused(exc) from None
    return task_doc(task.task_id, task.context, {}, "TASK_STATE_CANCELED", 0, "", "Task was canceled")


async def _stream(
    api: InnerApi, assistant: dict[str, object], params: dict[str, object], rpc_id: Any, legacy: bool
) -> AsyncGenerator[dict[str, object], None]:
    """The SSE messages of ``SendStreamingMessage`` (each a JSON-RPC response)."""

    def out(result: dict[str, object]) -> dict[str, object]:
        return {
            "event": "message",
            "data": dumps({"jsonrpc": "2.0", "id": rpc_id, "result": to_wire(result, legacy)}).decode(),
        }

    async with api:
        try:
            plan = await _plan(api, assistant, params)
            aid = str(assistant["assistant_id"])
            body = {**plan.body, "stream_mode": ["values", "messages-tuple"]}
            task_id, values, error = plan.task_id, None, ""
            async with aclosing(api.events("POST", f"/threads/{plan.context}/runs/stream", body)) as events:
                async for event, data in events:
                    if event == "metadata" and values is None:  # the run's first event
                        task_id = task_id or f"{plan.context}:{as_dict(data).get('run_id')}"
                        values = {}
                        user = {
                            **plan.message,
                            "kind": "message",
                            "taskId": task_id,
                            "contextId": plan.context,
                        }
                        first: dict[str, object] = {"kind": "task", "id": task_id, "contextId": plan.context}
                        first["history"] = [user]
                        first["status"] = {"state": "TASK_STATE_SUBMITTED", "timestamp": now()}
                        yield out(first)
                        yield out(
                            status_update(task_id, plan.context, "TASK_STATE_WORKING", None, final=False)
                        )
                    elif event == "values":
                        values = data
                    elif event == "error":
                        found = as_dict(data)
                        error = f"{found.get('error', 'Error')}: {found.get('message', '')}".rstrip(": ")
                    elif event == "messages" and task_id is not None:
                        text = said(data, task_id, plan.context)
                        if text is not None:
                            yield out(
                                status_update(task_id, plan.context, "TASK_STATE_WORKING", text, final=False)
                            )
            assert task_id is not None, "the run's stream began with no metadata"  # noqa: S101
            state, _ = outcome(values)
            if error:
                note = agent_message([{"kind": "text", "text": error}], task_id, plan.context)
                yield out(status_update(task_id, plan.context, "TASK_STATE_FAILED", note, final=True))
                return
            artifact = (
                interrupt_artifact(as_list(as_dict(values).get("__interrupt__")))
                if state == "TASK_STATE_INPUT_REQUIRED"
                else reply_artifact(values, aid)
            )
            update = {
                "kind": "artifact-update",
                "taskId": task_id,
                "contextId": plan.context,
                "artifact": artifact,
            }
            yield out({**update, "append": False, "lastChunk": True})
            yield out(status_update(task_id, plan.context, state, None, final=True))
        except Fail as exc:
            yield {"event": "message", "data": dumps(exc.response(rpc_id)).decode()}
        except InnerError as exc:
            yield {"event": "message", "data": dumps(_refused(exc).response(rpc_id)).decode()}


@api.post(
    "/a2a/{assistant_id}",
    "A2A JSON-RPC",
    response={"type": "object", "description": "A JSON-RPC response (message/stream: server-sent events)."},
    description=(
        "A JSON-RPC 2.0 request of the A2A protocol: `message/send` / `SendMessage`, `message/stream` / "
        "`SendStreamingMessage` (Accept: text/event-stream), `tasks/get` / `GetTask`, `tasks/cancel` / "
        "`CancelTask`. `message.contextId` is a thread id; a task is `{thread_id}:{run_id}`."
    ),
)
async def _rpc(request: Request) -> Response:
    """``POST /a2a/{assistant_id}``: one JSON-RPC request."""
    try:
        message: Any = loads(await request.body())
    except ValueError:
        return _error(PARSE_ERROR, "Invalid JSON payload")
    if not isinstance(message, dict) or as_dict(message).get("jsonrpc") != "2.0":
        return _error(
            INVALID_REQUEST, "a JSON-RPC 2.0 request object is expected (jsonrpc: '2.0', id, method)"
        )
    message = as_dict(message)
    rpc_id, method = message.get("id"), message.get("method")
    if rpc_id is not None and not isinstance(rpc_id, (str, int, float)):
        return _error(INVALID_REQUEST, "'id' must be a string, a number or null")
    if not isinstance(method, str):
        return _error(
            INVALID_REQUEST if method is None else METHOD_NOT_FOUND, "'method' must be a string", rpc_id
        )
    legacy = method in _LEGACY
    name = _LEGACY.get(method, method)
    if name in _UNIMPLEMENTED:
        return _error(UNSUPPORTED, f"{method} is not implemented by plait serve", rpc_id)
    if name not in ("SendMessage", "SendStreamingMessage", "GetTask", "CancelTask"):
        return _error(METHOD_NOT_FOUND, f"Method not found: {method}", rpc_id)
    accept = request.headers.get("accept", "")
    wanted = "text/event-stream" if name == "SendStreamingMessage" else "application/json"
    if not accepts(accept, wanted):
        return json_response({"detail": f"the Accept header must name {wanted} for {method}"}, 400)
    params = as_dict(message.get("params"))
    api = InnerApi(request)
    if name == "SendStreamingMessage":
        try:
            async with api:
                assistant = await _assistant(api, request.path_params["assistant_id"])
        except Fail as exc:
            return json_response(exc.response(rpc_id), exc.http)
        return EventSourceResponse(_stream(InnerApi(request), assistant, params, rpc_id, legacy))
    handler = {"SendMessage": _send, "GetTask": _get, "CancelTask": _cancel}[name]
    try:
        async with api:
            assistant = await _assistant(api, request.path_params["assistant_id"])
            result = await handler(api, assistant, params)
    except Fail as exc:
        return json_response(exc.response(rpc_id), exc.http)
    except InnerError as exc:
        return json_response(_refused(exc).response(rpc_id))
    wire = to_wire(result, legacy) if legacy or name == "SendMessage" else result  # (1.0: a Task as is)
    return json_response({"jsonrpc": "2.0", "id": rpc_id, "result": wire})


def _plait_version() -> str:
    try:
        return version("plait")
    except PackageNotFoundError:
        return "unknown"


async def _card(request: Request, assistant_id: str) -> Response:
    async with InnerApi(request) as api:
        status, found, headers = await api.call("GET", f"/assistants/{assistant_id}")
        if status not in (404, 422) and status >= 400:  # (403, a database down's 503: as they are)
            kept = {k: v for k, v in headers.items() if k.lower() in ("retry-after", "www-authenticate")}
            return json_response(found, status, kept)
        if status in (404, 422):
            message = f"Assistant {assistant_id} not found (an assistant id or a graph id)"
            return json_response({"error": {"code": INVALID_PARAMS, "message": message}}, 404)
        assistant = as_dict(found)
        keys = await _input_keys(api, str(assistant["assistant_id"]))
    aid, name = str(assistant["assistant_id"]), str(assistant.get("name") or assistant_id)
    description = str(assistant.get("description") or f"{name} assistant")
    scheme = request.headers.get("x-forwarded-proto") or request.url.scheme
    url = f"{scheme}://{request.url.netloc}{request.scope.get('root_path', '')}/a2a/{aid}"
    modes = ["application/json", "text/plain"]
    skill = {
        "id": f"{aid}-main",
        "name": f"{name} Capabilities",
        "description": description,
        "tags": ["assistant", "plait"],
        "examples": [],
        "inputModes": modes,
        "outputModes": modes,
    }
    return json_response(
        {
            "name": name,
            "description": description,
            "url": url,
            "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True, "pushNotifications": False, "stateTransitionHistory": False},
            "defaultInputModes": modes,
            "defaultOutputModes": modes,
            "skills": [{**skill, "metadata": {"inputSchema": {"properties": sorted(keys)}}}],
            "version": _plait_version(),
        }
    )


@api.get("/a2a/{assistant_id}", "A2A Agent Card", response=_CARD)
@api.get("/a2a/{assistant_id}/.well-known/agent-card.json", "A2A Agent Card (well-known)", response=_CARD)
@api.get(
    "/a2a/{assistant_id}/.well-known/agent.json", "A2A Agent Card (well-known, old name)", response=_CARD
)
async def _agent(request: Request) -> Response:
    """``GET /a2a/{assistant_id}`` and its ``/.well-known/agent-card.json``: the agent card."""
    return await _card(request, request.path_params["assistant_id"])


class _CardQuery(Query):
    assistant_id: str | None = Field(None, description="The assistant (its id, or a graph id).")


@api.get("/.well-known/agent-card.json", "A2A Agent Card of an Assistant", query=_CardQuery, response=_CARD)
async def _root_card(request: Request, query: _CardQuery) -> Response:
    """``GET /.well-known/agent-card.json?assistant_id=``: that assistant's agent card."""
    assistant_id = query.assistant_id
    if not assistant_id:
        message = "Missing required query parameter: assistant_id (or ask /a2a/{assistant_id}/.well-known/agent-card.json)"
        return json_response({"error": {"code": INVALID_PARAMS, "message": message}}, 400)
    return await _card(request, assistant_id)


routes = api.routes()
