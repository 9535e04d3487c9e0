"""Execute one claimed run: stream the graph, publish its events, record the outcome."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, TypedDict

import orjson

from plait.pregel._control import CONFIG_KEY_STRICT_RESUME
from plait.server._auth import AuthUser
from plait.server._data import runs
from plait.server._db import Row
from plait.server._messages import MessagesMode, debug_payload
from plait.server._protocol_run import PROTOCOL_KEY, stream_protocol
from plait.server._records import AssistantDoc, RunDoc
from plait.server._snapshot import interrupts_by_task, output_interrupts, thread_status
from plait.server._state import ServerState
from plait.server._webhook import payload
from plait.server._wire import as_dict, as_list, command_of, dumps, loads, now_iso

__all__ = ["STREAM_MODES", "execute_run"]

_log = logging.getLogger("plait.server")

STREAM_MODES = {
    "values": "values",
    "updates": "updates",
    "messages-tuple": "messages",
    "messages": "messages",
    "custom": "custom",
    "debug": "debug",
    "tasks": "tasks",
    "checkpoints": "checkpoints",
    "events": "",
}
"""Stream modes of the API and the plait mode each one needs."""


def merged_config(doc: RunDoc, assistant: AssistantDoc) -> dict[str, object]:
    """The assistant's config, then the run's, then the server's keys in ``configurable``."""
    base, given = as_dict(assistant.get("config")), as_dict(doc["kwargs"].get("config"))
    configurable = {
        **as_dict(base.get("configurable")),
        **as_dict(given.get("configurable")),
        "run_id": doc["run_id"],
        "thread_id": doc["thread_id"],
        "graph_id": assistant["graph_id"],
        "assistant_id": assistant["assistant_id"],
    }
    return {**base, **given, "configurable": configurable}


def run_config(doc: RunDoc, assistant: AssistantDoc) -> dict[str, object]:
    """The graph config of a run: :func:`merged_config`, its checkpoint and its metadata; the user who
    made it (custom auth) as ``configurable["langgraph_auth_user"]``, read like LangGraph's
    (``user.identity``, ``user["identity"]``, ``user.get(...)``)."""
    config = merged_config(doc, assistant)
    configurable, kwargs = as_dict(config["configurable"]), doc["kwargs"]
    user = configurable.get("langgraph_auth_user")
    if isinstance(user, dict):  # made by a user of the config's auth
        permissions = [str(p) for p in as_list(configurable.get("langgraph_auth_permissions"))]
        configurable["langgraph_auth_user"] = AuthUser(user, permissions)
    if checkpoint_id := kwargs.get("checkpoint_id"):
        configurable["checkpoint_id"] = checkpoint_id
    if kwargs.get("strict_resume"):
        configurable[CONFIG_KEY_STRICT_RESUME] = True
    config["metadata"] = {
        **as_dict(doc.get("metadata")),
        "run_id": doc["run_id"],
        "thread_id": doc["thread_id"],
    }
    return config


async def _resumed_input(graph: Any, config: dict[str, object], doc: RunDoc, attempt: int) -> object:
    kwargs = doc["kwargs"]
    if attempt > 1 and not kwargs.get("temporary"):
        snap = await graph.aget_state(
            {"configurable": {"thread_id": as_dict(config["configurable"])["thread_id"]}}
        )
        if as_dict(snap.metadata).get("run_id") == doc["run_id"]:
            return None  # an earlier attempt saved checkpoints: go on from the last one
    if command := kwargs.get("command"):
        return command_of(command)
    return kwargs.get("input")


class _Emitter:
    def __init__(self, state: ServerState, run_id: str, modes: list[str], *, quiet: bool = False) -> None:
        self.state, self.run_id = state, run_id
        # quiet: only the outcome is published (a runs.wait run: its client wants nothing else)
        self.wanted: set[str] = set() if quiet else set(modes)
        self.messages = MessagesMode() if "messages" in self.wanted else None
        self.values: Any = None

    def plait_modes(self) -> list[str]:
        return sorted({STREAM_MODES[m] for m in self.wanted if m != "events"} | {"values"})

    async def emit(self, mode: str, chunk: Any, ns: tuple[str, ...] = ()) -> None:
        """Publish one streamed chunk; a subgraph's (``ns``) as ``mode|ns…`` like LangGraph's server."""
        publish = self.state.broker.publish
        suffix = "".join(f"|{part}" for part in ns)
        if mode == "values":
            if not ns:
                self.values = chunk
            if "values" not in self.wanted:
                return
        if mode == "messages":
            if "messages-tuple" in self.wanted:
                publish(self.run_id, "messages" + suffix, [chunk[0], chunk[1]])
            if self.messages is not None:
                for event, data in self.messages.events(chunk):
                    publish(self.run_id, event, data)
        else:
            if mode == "debug":
                chunk = debug_payload(chunk)
            publish(self.run_id, mode + suffix, chunk)


async def _stream(
    state: ServerState,
    graph: Any,
    emitter: _Emitter,
    doc: RunDoc,
    attempt: int,
    config: dict[str, object],
) -> None:
    kwargs = doc["kwargs"]
    value = await _resumed_input(graph, config, doc, attempt)
    options: dict[str, object] = {"durability": kwargs.get("durability") or "async"}
    for key, nodes in (
        ("interrupt_before", kwargs.get("interrupt_before")),
        ("interrupt_after", kwargs.get("interrupt_after")),
    ):
        if nodes is not None:
            options[key] = nodes
    modes, context = emitter.plait_modes(), kwargs.get("context") or None
    subgraphs = bool(kwargs.get("subgraphs"))
    if as_dict(config["configurable"]).get(PROTOCOL_KEY):  # a run of the thread event protocol
        options["context"] = context
        emitter.values = await stream_protocol(state.broker, emitter.run_id, graph, value, config, options)
        return
    if "events" in emitter.wanted:
        await _stream_events(graph, emitter, value, config, context, subgraphs, options)
        return
    async for item in graph.astream(
        value, config, stream_mode=modes, context=context, subgraphs=subgraphs, **options
    ):
        ns, mode, chunk = item if subgraphs else ((), *item)
        await emitter.emit(mode, chunk, tuple(ns))


async def _stream_events(  # noqa: PLR0913 - the parts of a run
    graph: Any,
    emitter: _Emitter,
    value: object,
    config: dict[str, object],
    context: object,
    subgraphs: bool,
    options: dict[str, object],
) -> None:
    """``stream_mode="events"``: every ``astream_events`` v2 event, as LangGraph's server does; the
    graph's own stream chunks (the root run's ``on_chain_stream``) go out as their modes."""
    named = {**config, "run_name": as_dict(config["configurable"])["graph_id"]}
    root: Any = None
    async for event in graph.astream_events(
        value,
        named,
        version="v2",
        stream_mode=emitter.plait_modes(),
        context=context,
        subgraphs=subgraphs,
        **options,
    ):
        root = event["run_id"] if root is None else root
        if "langsmith:hidden" in (event.get("tags") or ()):  # as LangGraph's server: not for clients
            continue
        if event["event"] == "on_chain_stream" and event["run_id"] == root:
            chunk = event["data"]["chunk"]
            ns, mode, data = chunk if subgraphs else ((), *chunk)
            await emitter.emit(mode, data, tuple(ns))
        else:
            emitter.state.broker.publish(emitter.run_id, "events", event)


async def execute_run(state: ServerState, row: Row, assistant: AssistantDoc) -> bool:
    """Run ``row`` to its end and record the outcome (run status, thread status and values).

    Whether a pending run waits on the run's thread (the worker should look for it now).
    """
    doc: RunDoc = loads(row["doc"])
    run_id = doc["run_id"]
    temporary = bool(doc["kwargs"].get("temporary"))
    graph = state.graph(assistant["graph_id"], stateless=temporary)
    config = run_config(doc, assistant)
    quiet = bool(doc["kwargs"].get("wait"))
    emitter = _Emitter(state, run_id, list(doc["kwargs"].get("stream_mode") or ["values"]), quiet=quiet)
    status, error, cancel, started = "success", None, None, now_iso()
    clock = time.perf_counter()
    done = asyncio.Event()
    flusher = asyncio.create_task(state.broker.keep_flushing(run_id, done)) if state.broker.shared else None
    try:  # a cancel at any await from here on ends the run as cancelled (its thread and slot freed)
        state.broker.open(run_id, await state.broker.next_seq(run_id, int(row["attempt"])))
        state.broker.stirred()  # followers of the thread (join_stream) see it start
        if run_id in state.cancels:  # cancelled before it began
            raise asyncio.CancelledError
        await _stream(state, graph, emitter, doc, int(row["attempt"]), config)
    except asyncio.CancelledError:
        cancel = state.cancels.pop(run_id, None)
        if cancel is None:
            raise  # the worker is shutting down: the run goes back to the queue
        status = "interrupted"
    except Exception as exc:  # noqa: BLE001 - the run's failure is reported to its clients
        _log.info("run %s failed: %s: %s", run_id, type(exc).__name__, exc)
        status, error = "error", {"error": type(exc).__name__, "message": str(exc)}
        state.broker.publish(run_id, "error", error)
    finally:
        done.set()
    state.finishing.add(run_id)  # (from here on a cancel no longer interrupts this task)
    try:
        if flusher is not None:
            await asyncio.gather(flusher, return_exceptions=True)
        waiting = await finish_run(state, doc, graph, Outcome(status, error, cancel, emitter.values, started))
        if state.metrics is not None:
            state.metrics.run_ended(status, time.perf_counter() - clock)
        return waiting
    finally:
        state.finishing.discard(run_id)
        state.cancels.pop(run_id, None)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended: status, error (``{"error", "message"}``), cancel action, last values."""

    status: str
    error: object
    cancel: str | None
    values: object
    started: str = ""
    """When the run started (ISO-8601), for its webhook."""


class ThreadAfter(TypedDict):
    """The thread's status, values, interrupts (by task) and error once a run has ended."""

    status: str
    values: object
    interrupts: dict[str, list[dict[str, object]]]
    error: object


async def finish_run(state: ServerState, doc: RunDoc, graph: Any, end: Outcome) -> bool:
    """Publish the run's end, store its status and the thread's state; whether a run waits on the thread."""
    status, error, cancel, values = end.status, end.error, end.cancel, end.values
    run_id, thread_id = doc["run_id"], doc["thread_id"]
    temporary = bool(doc["kwargs"].get("temporary"))
    thread: ThreadAfter | None = None
    if not temporary:
        if cancel == "rollback":  # first: the thread shows the state from before the run
            await _rollback(state, graph, thread_id, run_id)
        thread = await _thread_after(graph, thread_id, status, error, cancel)
        values = thread["values"]
    # each value is encoded once, for the thread's row, the run's end and the waiting client
    parts: object = values
    if isinstance(values, dict):
        parts = {k: orjson.Fragment(dumps(v)) for k, v in as_dict(values).items()}
    values_json = dumps(parts)
    output = values_json
    if thread is not None and thread["interrupts"] and isinstance(parts, dict):
        output = dumps({**as_dict(parts), "__interrupt__": output_interrupts(thread["interrupts"])})
    end_data = dumps({"status": status, "values": orjson.Fragment(output), "error": error})
    waiting = await record_finish(state, doc, status, thread, values_json, cancel == "rollback", end_data)
    state.broker.ended(run_id, end_data, None if status == "error" else output)
    state.broker.finished(run_id)
    url = doc["kwargs"].get("webhook")
    if url:
        run: RunDoc = {**doc, "status": status, "updated_at": now_iso()}
        state.call_webhook(url, payload(run, end.started, orjson.Fragment(values_json), error))
    return waiting


async def _thread_after(
    graph: Any, thread_id: str, status: str, error: object, cancel: str | None
) -> ThreadAfter:
    snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    thread_state = "error" if status == "error" else thread_status(snap)
    if cancel == "rollback":  # (a cancelled run's thread is "interrupted" while nodes are left, as LangGraph)
        thread_state = "idle"
    if cancel is not None:  # the thread names the cancel, in LangGraph's words (braces included)
        error = {
            "error": "UserRollback" if cancel == "rollback" else "UserInterrupt",
            "message": f"{cancel} requested via POST /threads/{{thread_id}}/runs/{{run_id}}/cancel",
        }
    return {
        "status": thread_state,
        "values": snap.values if snap.created_at is not None else None,  # no checkpoint: no values
        "interrupts": interrupts_by_task(snap) if thread_state == "interrupted" else {},
        "error": error,
    }


async def _rollback(state: ServerState, graph: Any, thread_id: str, run_id: str) -> None:
    """Put the thread back where it was before ``run_id`` (a new head equal to that checkpoint; the
    run's checkpoints stay in the history, where LangGraph's server deletes them); a thread the run
    started has its checkpoints deleted."""
    async for snap in graph.aget_state_history({"configurable": {"thread_id": thread_id}}):
        if as_dict(snap.metadata).get("run_id") != run_id:
            await graph.aupdate_state(snap.config, None, as_node="__copy__")
            return
    await state.saver.adelete_thread(thread_id)


async def record_finish(  # noqa: PLR0913 - the parts of a run's end
    state: ServerState,
    doc: RunDoc,
    status: str,
    thread: ThreadAfter | None,
    values_json: bytes,
    delete: bool,
    end: bytes,
) -> bool:
    """Store the run's final status, its last events and the thread's status and values, at once.

    A thread deleted while the run ran has its checkpoints deleted again after this: the run saved
    its last work as it stopped (a cancelled step's writes, a held checkpoint), after they went.
    (A thread created again under that id before the run ended keeps that work; one created in
    the instant between this commit and that deletion loses what was written to it then.)

    Whether a pending run waits on the thread (see :func:`plait.server._data.runs.finish`).
    """
    run_id, thread_id = doc["run_id"], doc["thread_id"]
    events = state.broker.end(run_id, end)
    ending = (
        runs.ThreadEnd(
            thread["status"],
            thread["interrupts"],
            thread["error"],
            None if thread["values"] is None else values_json.decode(),
        )
        if thread is not None
        else None
    )
    waiting, gone = await runs.finish(
        state.db,
        run_id,
        thread_id,
        status,
        delete=delete,
        thread=ending,
        events=events,
        worker=state.worker_id,
    )
    if gone:  # deleted while the run ran: what the run saved as it stopped came after its checkpoints went
        try:
            await state.saver.adelete_thread(thread_id)
        except Exception:  # noqa: BLE001 - the run has ended; the thread is gone either way
            _log.exception(
                "thread %s was deleted while a run ran; deleting its checkpoints again failed", thread_id
            )
    return waiting
