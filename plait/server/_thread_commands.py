"""Commands of the thread event protocol (``POST /threads/{thread_id}/commands``, and the frames of
the WebSocket at ``/threads/{thread_id}/stream/events``).

A command is ``{"id": n, "method": ..., "params": {...}}``; its answer ``{"type": "success", "id",
"result", "meta"}`` or ``{"type": "error", "id", "error", "message"}`` (the protocol's codes).

* ``run.start`` (``assistant_id``, ``input``, ``config``, ``metadata``; ``multitaskStrategy`` as
  the JS client sends it): a run on the thread, which it creates if needed; ``{"run_id"}``. Its
  ``input`` answers the thread's interrupts when the thread waits on some (as LangGraph's server).
* ``input.respond`` (``interrupt_id``, ``namespace``, ``response``; or ``responses``: a list of
  them; ``update``, ``goto``, ``config``, ``metadata``): a run resuming the thread with the answers
  (each must name an interrupt the thread waits on: else ``no_such_interrupt``); ``{}``.
* ``agent.getTree`` (``run_id``: the thread's latest run if not given): the run's graph and
  subgraphs with their status, as far as its events went.

``subscription.*`` are the WebSocket's own (:mod:`plait.server._thread_events`); ``state.*`` and
``input.inject`` are answered ``not_supported`` (the REST routes of thread state do that work).
Over HTTP a command that is not one, or whose params are not what it takes, is a 422 naming the
field; a thread that does not exist (or that the config's auth hides from the user) is a 404
(``run.start`` creates it); what the thread's state refuses (``no_such_interrupt``...) is an
error answer, as the protocol has it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection

from plait.server._api import Body, explain
from plait.server._auth import authorize
from plait.server._auth_filter import permits
from plait.server._auth_runs import run_access
from plait.server._create import create_run
from plait.server._data import events, thread_runs
from plait.server._protocol import RunEvents
from plait.server._protocol_run import PROTOCOL_KEY, is_protocol_run
from plait.server._records import RunDoc, ThreadDoc
from plait.server._run_models import RunCreate
from plait.server._state import ServerState
from plait.server._stream import END
from plait.server._threads import get_thread
from plait.server._wire import ApiError, as_dict, as_list, check_uuid, loads

__all__ = [
    "Command",
    "Refusal",
    "answer",
    "graph_name",
    "params_of",
    "run_command",
    "success",
    "visible_thread",
]

SETTLE = 10.0
"""Seconds ``input.respond`` waits for the thread's running run to record its interrupts."""
_ELSEWHERE = {
    "state.get": "GET /threads/{thread_id}/state",
    "state.listCheckpoints": "POST /threads/{thread_id}/history",
    "state.fork": "run.start with config.configurable.checkpoint_id",
    "input.inject": "run.start with the message as input",
}
_SUBSCRIPTIONS = ("subscription.subscribe", "subscription.unsubscribe", "subscription.reconnect")
KNOWN = ("run.start", "input.respond", "agent.getTree", *_SUBSCRIPTIONS, *_ELSEWHERE)
"""The protocol's command methods (those plait does not do are answered ``not_supported``)."""


class Refusal(Exception):
    """A command answered with a protocol error (``code``); over HTTP with ``status``."""

    def __init__(self, code: str, message: str, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class Command(Body):
    """A protocol command."""

    id: Annotated[int, Field(ge=0, description="The client's number for the command (its answer's id).")]
    method: str
    params: dict[str, object] | None = None


class RunStart(Body):
    """``run.start``'s params."""

    assistant_id: str
    input: Any = None
    config: dict[str, object] | None = None
    metadata: dict[str, object] | None = None
    langsmith_tracer: dict[str, object] | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = Field(
        None, alias="multitaskStrategy"
    )


class Answer(Body):
    """One answer of ``input.respond``."""

    interrupt_id: str
    namespace: list[str] | None = None
    response: Any = None


class InputRespond(Body):
    """``input.respond``'s params: one answer, or several (``responses``)."""

    interrupt_id: str | None = None
    namespace: list[str] | None = None
    response: Any = None
    responses: Annotated[list[Answer], Field(min_length=1)] | None = None
    update: dict[str, object] | list[object] | None = None
    goto: Any = None
    config: dict[str, object] | None = None
    metadata: dict[str, object] | None = None


class GetTree(Body):
    """``agent.getTree``'s params."""

    run_id: str | None = None


def success(command_id: int, result: dict[str, object], seq: int = 0) -> dict[str, object]:
    """A command's success answer (``seq``: the last event numbered on the connection)."""
    return {"type": "success", "id": command_id, "result": result, "meta": {"applied_through_seq": seq}}


def answer(command_id: int | None, exc: Refusal | ApiError | HTTPException) -> dict[str, object]:
    """The protocol error answer of a refusal (an :class:`ApiError` or the auth's refusal: by its status)."""
    if isinstance(exc, Refusal):
        return {"type": "error", "id": command_id, "error": exc.code, "message": exc.message}
    if isinstance(exc, HTTPException):
        exc = ApiError(exc.status_code, str(exc.detail))
    code = {401: "permission_denied", 403: "permission_denied"}.get(exc.status, "invalid_argument")
    return {
        "type": "error",
        "id": command_id,
        "error": code if exc.status < 500 else "unknown_error",
        "message": exc.detail,
    }


def params_of(model: type[Body], params: dict[str, object] | None) -> Any:
    """``params`` checked by ``model``.

    Raises:
        Refusal: ``invalid_argument`` (422) naming each field that is not what ``model`` takes.
    """
    try:
        return TypeAdapter(model).validate_python(params or {}, strict=True)
    except ValidationError as exc:
        raise Refusal("invalid_argument", explain(exc.errors(), "params", "params."), 422) from None


def graph_name(doc: Mapping[str, object]) -> str:
    """A run's graph id (its API document's), the root graph's name in its events."""
    configurable = as_dict(as_dict(as_dict(doc.get("kwargs")).get("config")).get("configurable"))
    return str(configurable.get("graph_id") or doc.get("assistant_id"))


async def visible_thread(
    state: ServerState, connection: HTTPConnection, thread_id: str, action: str = "read"
) -> ThreadDoc:
    """The thread, once the config's auth allows ``action`` on it to the connection's user.

    Raises:
        ApiError: 404, the thread does not exist or the auth's filter hides it.
        HTTPException: 403 (or the handler's status), the auth refuses.
    """
    filters = await authorize(connection, "threads", action, {"thread_id": thread_id})
    found = await get_thread(state.db, thread_id)
    if found is None or not permits(filters, found.get("metadata")):
        raise ApiError(404, f"Thread {thread_id} not found")
    return found


@dataclass
class _Context:
    state: ServerState
    thread_id: str
    connection: HTTPConnection
    """The HTTP request or the WebSocket the command came in (for the config's auth)."""

    async def thread(self, action: str = "read") -> ThreadDoc:
        """The thread (see :func:`visible_thread`)."""
        return await visible_thread(self.state, self.connection, self.thread_id, action)

    async def create(self, data: dict[str, object]) -> RunDoc:
        """A run of the protocol on the thread (``data``: the run request, as ``runs.create``'s body;
        the config's auth may change it)."""
        data["config"] = config = dict(as_dict(data.get("config")))
        config["configurable"] = {**as_dict(config.get("configurable")), PROTOCOL_KEY: True}
        access = await run_access(self.connection, self.thread_id, data)
        body = params_of(RunCreate, {k: v for k, v in data.items() if v is not None})
        return await create_run(self.state, self.thread_id, body, access=access)


async def run_command(
    state: ServerState, thread_id: str, command: Command, connection: HTTPConnection
) -> dict[str, object]:
    """The result of ``command`` on the thread (``connection``: the HTTP request or WebSocket it came in).

    Raises:
        Refusal: the command is refused (its code, and its HTTP status).
        ApiError: the thread does not exist (404), the run is refused (its status).
    """
    context = _Context(state, check_uuid(thread_id, "thread ID"), connection)
    params = command.params or {}
    method = command.method
    if method == "run.start":
        return await _run_start(context, params_of(RunStart, params))
    if method == "input.respond":
        return await _respond(context, params_of(InputRespond, params))
    if method == "agent.getTree":
        return await _tree(context, params_of(GetTree, params))
    if method in _SUBSCRIPTIONS:
        raise Refusal(
            "not_supported",
            f"{method} is a command of the WebSocket transport (/threads/{{thread_id}}/stream/events); over "
            "HTTP each POST /threads/{thread_id}/stream/events is one subscription",
        )
    if method in _ELSEWHERE:
        raise Refusal(
            "not_supported", f"{method} is not implemented by plait serve; use {_ELSEWHERE[method]}"
        )
    raise Refusal(
        "unknown_command", f"method: unknown command {method!r}; choose from {', '.join(KNOWN)}", 422
    )


async def _run_start(context: _Context, params: RunStart) -> dict[str, object]:
    if params.langsmith_tracer is not None:
        raise Refusal("not_supported", "params.langsmith_tracer: plait serve does not trace to LangSmith")
    data: dict[str, object] = {
        "assistant_id": params.assistant_id,
        "config": params.config,
        "metadata": params.metadata,
        "if_not_exists": "create",
        "multitask_strategy": params.multitask_strategy or "enqueue",
        "stream_subgraphs": True,
    }
    checkpoint_id = as_dict(as_dict(params.config).get("configurable")).get("checkpoint_id")
    if checkpoint_id is not None:
        if not isinstance(checkpoint_id, str):
            raise Refusal(
                "invalid_argument", "params.config.configurable.checkpoint_id: expected a string", 422
            )
        data["checkpoint_id"] = checkpoint_id
    thread = await get_thread(context.state.db, context.thread_id)
    if thread is not None:
        thread = await context.thread()  # (the auth may hide it)
    if params.input is not None and thread is not None and _waits_on(thread):
        data["command"] = {"resume": params.input}  # the input answers the interrupts (as LangGraph)
    else:
        data["input"] = params.input
    run = await context.create(data)
    return {"run_id": run["run_id"]}


def _waits_on(thread: ThreadDoc) -> set[str]:
    """The ids of the interrupts the thread waits on."""
    if thread.get("status") != "interrupted":
        return set()
    found: set[str] = set()
    for items in as_dict(thread.get("interrupts")).values():
        for item in as_list(items):
            interrupt_id = as_dict(item).get("id")
            if isinstance(interrupt_id, str):
                found.add(interrupt_id)
    return found


async def _respond(context: _Context, params: InputRespond) -> dict[str, object]:
    if params.responses is not None:
        answers = {a.interrupt_id: a.response for a in params.responses}
    elif params.interrupt_id is not None:
        answers = {params.interrupt_id: params.response}
    else:
        raise Refusal(
            "invalid_argument",
            "params.interrupt_id: expected a string, got nothing (or params.responses: a list of answers)",
            422,
        )
    thread = await context.thread()
    waiting = _waits_on(thread)
    if not set(answers) <= waiting and thread.get("status") == "busy":
        await _settle(context.state, context.thread_id)
        thread = await context.thread()
        waiting = _waits_on(thread)
    unknown = sorted(set(answers) - waiting)
    if unknown:
        raise Refusal(
            "no_such_interrupt",
            f"interrupt {unknown[0]} is not pending on thread {context.thread_id} "
            f"(pending: {sorted(waiting) or 'none'})",
        )
    assistant_id = as_dict(thread.get("metadata")).get("assistant_id")
    if not isinstance(assistant_id, str):
        raise Refusal("no_such_run", f"no run of an assistant is bound to thread {context.thread_id}")
    command: dict[str, object] = {"resume": answers}
    command.update({k: v for k, v in (("update", params.update), ("goto", params.goto)) if v is not None})
    data = {
        "assistant_id": assistant_id,
        "command": command,
        "config": params.config,
        "metadata": params.metadata,
    }
    await context.create({**data, "stream_subgraphs": True})
    return {}


async def _settle(state: ServerState, thread_id: str) -> None:
    """Wait (up to :data:`SETTLE` seconds) for the thread's running run to record its end."""
    running = await thread_runs.running(state.db, thread_id)

    async def ended(run_id: str) -> None:
        async for _seq, event, _data in state.broker.follow(run_id, 0):
            if event == END:
                return

    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(ended(run_id) for run_id in running)), SETTLE)


async def _tree(context: _Context, params: GetTree) -> dict[str, object]:
    await context.thread()
    row = await thread_runs.latest(context.state.db, context.thread_id, params.run_id)
    if row is None:
        raise Refusal("no_such_run", f"thread {context.thread_id} has no run {params.run_id or ''}".rstrip())
    doc = loads(row["doc"])
    reader = RunEvents(row["run_id"], graph_name(doc), is_protocol_run(doc))
    for seq, name, data in await _logged(context.state, row["run_id"]):
        reader.entry(seq, name, data)
    return {"tree": reader.tree()}


async def _logged(state: ServerState, run_id: str) -> list[tuple[int, str, bytes]]:
    """The run's log as far as it went (from this process's memory, else the shared table)."""
    log = state.broker.logs.get(run_id)
    if log is not None and log.first_seq == 1:
        return list(log.events)
    if not state.broker.shared:
        return []
    rows = await events.after(state.db, run_id, 0)
    return [(int(r["seq"]), str(r["event"]), str(r["data"]).encode()) for r in rows]
