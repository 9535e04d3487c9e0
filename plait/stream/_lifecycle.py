"""Subgraph lifecycle of a v3 run, read off the graph's ``tasks`` stream.

A subgraph shows itself by the first task event under its namespace (``node:task_id``):
that is when it *started*. It ends when the parent task that runs it reports its
result (``completed``, ``failed`` or ``interrupted``), or, failing that, when the run
itself ends. :class:`_TasksLifecycleBase` does this bookkeeping once; its subclasses
decide what a start and an end produce:

- :class:`LifecycleTransformer`: ``run.lifecycle``, a flat log of :class:`LifecyclePayload`
  for subgraphs at every depth (also in the main event log, as ``lifecycle`` events);
- :class:`SubgraphTransformer`: ``run.subgraphs``, one :class:`SubgraphRunStream` handle per
  direct child subgraph, with projections of its own (``handle.values``, ``handle.subgraphs``…).

``tasks`` events are consumed by these transformers: they stay out of the main event log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import cast

from plait._internal._narrow import is_list, is_str_mapping
from plait.errors import GraphDrained, GraphInterrupt
from plait.stream._mux import StreamMux
from plait.stream._types import (
    LifecycleCause,
    LifecyclePayload,
    ProtocolEvent,
    StreamTransformer,
    SubgraphStatus,
)
from plait.stream.run_stream import AsyncSubgraphRunStream, SubgraphRunStream
from plait.stream.stream_channel import StreamChannel

__all__ = [
    "LifecycleCause",
    "LifecyclePayload",
    "LifecycleTransformer",
    "SubgraphStatus",
    "SubgraphTransformer",
    "split_segment",
    "status_of_error",
    "status_of_result",
]

_log = logging.getLogger("plait.stream")

Handle = SubgraphRunStream | AsyncSubgraphRunStream
Ns = tuple[str, ...]


def split_segment(segment: str) -> tuple[str, str | None]:
    """``"node:task_id"`` -> ``("node", "task_id")``; a segment without ``:`` has no task id."""
    name, colon, task_id = segment.partition(":")
    return name, (task_id if colon else None)


def status_of_error(err: BaseException) -> tuple[SubgraphStatus, str | None]:
    """How a subgraph still open when the run raised ``err`` ended, and the error text if it failed."""
    if isinstance(err, GraphDrained):
        return "drained", None
    if isinstance(err, GraphInterrupt):
        return "interrupted", None
    return "failed", str(err)


def status_of_result(result: Mapping[str, object]) -> tuple[SubgraphStatus, str | None]:
    """How a subgraph ended, from the task result of the parent task running it (an interrupt
    wins over an error)."""
    if result.get("interrupts"):
        return "interrupted", None
    error = result.get("error")
    if error:
        return "failed", str(error)
    return "completed", None


def _tool_call_id(task_input: object) -> str | None:
    """The tool call a task runs: a ``{"tool_call": {"id": ...}}`` input (one tool call per
    task), or the first call of a list of tool calls."""
    if is_str_mapping(task_input):
        call = task_input.get("tool_call")
        if is_str_mapping(call):
            found = call.get("id")
            return found if isinstance(found, str) else None
        return None
    if is_list(task_input):
        for item in task_input:
            if is_str_mapping(item):
                found = item.get("id")
                if isinstance(found, str):
                    return found
    return None


class _TasksLifecycleBase(StreamTransformer):
    """Finds subgraphs in the ``tasks`` events and tells a subclass when each starts and ends.

    Subclasses implement ``_should_track(ns)`` (which namespaces they care about),
    ``_on_started(ns, graph_name, trigger_call_id)`` (once per namespace, on its first task
    event; the cause, if known, is in ``self._pending_cause``) and
    ``_on_terminal(ns, status, error)`` (once per started namespace with a task id).

    State a subclass may read: ``_seen`` (namespaces started), ``_open`` (namespace -> id of
    the parent task whose result ends it), ``_lc_by_ns`` (namespace -> ``lc_agent_name`` of
    its first task event), ``_pending_tool_calls`` (task id -> id of the tool call it runs).
    A subgraph is named after the ``lc_agent_name`` of its tasks' metadata when they carry
    one (an agent), else after the node running it.
    """

    required_stream_modes = ("tasks",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._seen: set[Ns] = set()
        self._open: dict[Ns, str] = {}
        self._lc_by_ns: dict[Ns, str | None] = {}
        self._pending_tool_calls: dict[str, str] = {}
        self._pending_cause: LifecycleCause | None = None

    # -- what subclasses decide -----------------------------------------------------------------

    def _should_track(self, ns: Ns) -> bool:
        """Whether namespace ``ns`` is one this transformer reports."""
        raise NotImplementedError

    def _on_started(self, ns: Ns, graph_name: str | None, trigger_call_id: str | None) -> None:
        """Subgraph ``ns`` started."""
        raise NotImplementedError

    def _on_terminal(self, ns: Ns, status: SubgraphStatus, error: str | None) -> None:
        """Subgraph ``ns`` ended with ``status``."""
        raise NotImplementedError

    # -- bookkeeping ----------------------------------------------------------------------------

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "tasks":
            return True
        ns = tuple(event["params"]["namespace"])
        data: object = event["params"]["data"]
        if not is_str_mapping(data):
            return False
        payload = data
        if "result" in payload:
            self._handle_task_result(ns, payload)
        else:
            self._record_identity(ns, payload)
            self._record_pending_tool_calls(payload)
            self._handle_task_start(ns, payload)
        return False  # shown as lifecycle / subgraph projections instead

    @staticmethod
    def _agent_name(data: Mapping[str, object]) -> str | None:
        """The ``lc_agent_name`` in a task event's metadata (set by LangChain's ``create_agent``)."""
        metadata: object = data.get("metadata")
        found = metadata.get("lc_agent_name") if is_str_mapping(metadata) else None
        return cast("str | None", found)

    def _record_identity(self, ns: Ns, data: Mapping[str, object]) -> None:
        """Note the ``lc_agent_name`` of the first task event seen at ``ns``."""
        if ns not in self._lc_by_ns:
            self._lc_by_ns[ns] = self._agent_name(data)

    def _record_pending_tool_calls(self, data: Mapping[str, object]) -> None:
        """Remember the tool call a starting task runs, by task id (a subagent it starts is
        under ``node:<that task id>``)."""
        task_id = data.get("id")
        if isinstance(task_id, str):
            call_id = _tool_call_id(data.get("input"))
            if call_id is not None:
                self._pending_tool_calls[task_id] = call_id

    def _handle_task_start(self, ns: Ns, data: Mapping[str, object]) -> None:
        if ns in self._seen or not self._should_track(ns):
            return
        self._seen.add(ns)
        node, trigger_call_id = split_segment(ns[-1])
        agent = self._agent_name(data)
        cause: LifecycleCause | None = None
        if agent is not None and trigger_call_id is not None:
            call_id = self._pending_tool_calls.get(trigger_call_id)
            if call_id:
                cause = {"type": "toolCall", "tool_call_id": str(call_id)}
        self._pending_cause = cause
        self._on_started(ns, agent if agent is not None else (node or None), trigger_call_id)
        if trigger_call_id is not None:
            self._open[ns] = trigger_call_id

    def _pop_terminal_transitions(
        self, ns: Ns, data: Mapping[str, object]
    ) -> list[tuple[Ns, SubgraphStatus, str | None]]:
        """The open subgraphs directly under ``ns`` that the task result ``data`` ends (no
        longer open afterwards), with how they ended."""
        task_id = data.get("id")
        if not task_id:
            return []
        ended: list[tuple[Ns, SubgraphStatus, str | None]] = []
        for child, parent_task in list(self._open.items()):
            if parent_task == task_id and child[:-1] == ns:
                del self._open[child]
                ended.append((child, *status_of_result(data)))
        return ended

    def _handle_task_result(self, ns: Ns, data: Mapping[str, object]) -> None:
        for child, status, error in self._pop_terminal_transitions(ns, data):
            self._on_terminal(child, status, error)

    def finalize(self) -> None:
        """The run ended: subgraphs still open completed."""
        for ns in list(self._open):
            self._on_terminal(ns, "completed", None)
        self._open.clear()

    def fail(self, err: BaseException) -> None:
        """The run raised ``err``: subgraphs still open ended with it."""
        status, error = status_of_error(err)
        for ns in list(self._open):
            self._on_terminal(ns, status, error)
        self._open.clear()


class LifecycleTransformer(_TasksLifecycleBase):
    """``run.lifecycle``: a :class:`LifecyclePayload` when a subgraph starts and when it ends,
    for subgraphs at every depth below the scope; copied into the main log as ``lifecycle``
    events. A subgraph whose namespace has no task id gets no ``started`` item."""

    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._channel: StreamChannel[LifecyclePayload] = StreamChannel("lifecycle")

    def init(self) -> dict[str, object]:
        return {"lifecycle": self._channel}

    def _should_track(self, ns: Ns) -> bool:
        depth = len(self.scope)
        return len(ns) > depth and ns[:depth] == self.scope

    def _on_started(self, ns: Ns, graph_name: str | None, trigger_call_id: str | None) -> None:
        if trigger_call_id is None:  # no parent task to end it: only the run's end closes it
            return
        payload: LifecyclePayload = {"event": "started", "namespace": list(ns)}
        if graph_name:
            payload["graph_name"] = graph_name
        payload["trigger_call_id"] = trigger_call_id
        if self._pending_cause is not None:
            payload["cause"] = self._pending_cause
        self._channel.push(payload)

    def _on_terminal(self, ns: Ns, status: SubgraphStatus, error: str | None) -> None:
        payload: LifecyclePayload = {"event": status, "namespace": list(ns)}
        if error is not None:
            payload["error"] = error
        self._channel.push(payload)


class SubgraphTransformer(_TasksLifecycleBase):
    """``run.subgraphs``: a :class:`SubgraphRunStream` (async runs: :class:`AsyncSubgraphRunStream`)
    for each direct child subgraph, as it starts.

    A handle has the projections of a run of its own (the same transformers, scoped to the
    subgraph's namespace), fed with the events from under it; its ``status`` and ``error``
    tell how it ended. Grandchildren are on ``handle.subgraphs``. Read a handle's projections
    before pulling the run further (items pushed before anyone reads are not kept).
    """

    _native = True
    supports_sync = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Handle] = StreamChannel()
        self._handles: dict[Ns, Handle] = {}
        self._mux: StreamMux | None = None

    def init(self) -> dict[str, object]:
        return {"subgraphs": self._log}

    def _on_register(self, mux: object) -> None:
        self._mux = cast("StreamMux", mux)

    def _should_track(self, ns: Ns) -> bool:
        depth = len(self.scope)
        return len(ns) == depth + 1 and ns[:depth] == self.scope

    def _on_started(self, ns: Ns, graph_name: str | None, trigger_call_id: str | None) -> None:
        if self._mux is None:
            return
        try:
            child = self._mux._make_child(ns)  # pyright: ignore[reportPrivateUsage]
        except RuntimeError:  # a mux of pre-built transformers: nothing to scope anew
            return
        kind = AsyncSubgraphRunStream if child.is_async else SubgraphRunStream
        handle = kind(child, path=ns, graph_name=graph_name, trigger_call_id=trigger_call_id)
        self._handles[ns] = handle
        self._log.push(handle)

    @staticmethod
    def _mark(handle: Handle, status: SubgraphStatus, error: str | None) -> bool:
        """Record how ``handle`` ended; ``False`` if it had ended already."""
        if handle._seen_terminal:  # pyright: ignore[reportPrivateUsage]
            return False
        handle.status = status
        if error is not None and handle.error is None:
            handle.error = error
        handle._seen_terminal = True  # pyright: ignore[reportPrivateUsage]
        return True

    @staticmethod
    def _live(handle: Handle) -> bool:
        return not handle._mux._events._closed  # pyright: ignore[reportPrivateUsage]

    def _handle_for_event(self, event: ProtocolEvent) -> Handle | None:
        """The live handle of the child subgraph ``event`` comes from (or from under)."""
        ns = tuple(event["params"]["namespace"])
        depth = len(self.scope)
        if len(ns) <= depth:
            return None
        handle = self._handles.get(ns[: depth + 1])
        return handle if handle is not None and self._live(handle) else None

    def _sweep(self) -> list[Handle]:
        """Every handle not ended yet is marked completed; returns those whose mux is still open."""
        self._open.clear()
        return [h for h in self._handles.values() if self._mark(h, "completed", None) and self._live(h)]

    def _failing(self, err: BaseException) -> list[Handle]:
        status, error = status_of_error(err)
        self._open.clear()
        for handle in self._handles.values():
            self._mark(handle, status, error)
        return [h for h in self._handles.values() if self._live(h)]

    # >>> async source
    async def _aon_terminal(self, ns: Ns, status: SubgraphStatus, error: str | None) -> None:
        handle = self._handles.get(ns)
        if handle is None or not self._mark(handle, status, error) or not self._live(handle):
            return
        if status == "failed":
            await handle._mux.afail(RuntimeError(error or "Subgraph failed"))  # pyright: ignore[reportPrivateUsage]
        else:
            await handle._mux.aclose()  # pyright: ignore[reportPrivateUsage]

    async def aprocess(self, event: ProtocolEvent) -> bool:
        # the base class's bookkeeping first: a started subgraph has its handle before its events go there
        keep = True
        if event["method"] == "tasks":
            keep = False
            ns = tuple(event["params"]["namespace"])
            data: object = event["params"]["data"]
            if is_str_mapping(data) and "result" in data:
                for child, status, error in self._pop_terminal_transitions(ns, data):
                    await self._aon_terminal(child, status, error)
            elif is_str_mapping(data):
                payload = data
                self._record_identity(ns, payload)
                self._record_pending_tool_calls(payload)
                self._handle_task_start(ns, payload)
        handle = self._handle_for_event(event)
        if handle is not None:
            handle._observe_event(event)  # pyright: ignore[reportPrivateUsage]
            await handle._mux.apush(event)  # pyright: ignore[reportPrivateUsage]
        return keep

    async def afinalize(self) -> None:
        first: BaseException | None = None
        for handle in self._sweep():
            try:
                await handle._mux.aclose()  # pyright: ignore[reportPrivateUsage]
            except BaseException as exc:  # noqa: BLE001 - the others close first
                first = first or exc
        if first is not None:
            raise first

    async def afail(self, err: BaseException) -> None:
        for handle in self._failing(err):
            try:
                await handle._mux.afail(err)  # pyright: ignore[reportPrivateUsage]
            except Exception:
                _log.warning("could not fail the run of subgraph %s", handle.path, exc_info=True)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _on_terminal(self, ns: Ns, status: SubgraphStatus, error: str | None) -> None:
        handle = self._handles.get(ns)
        if handle is None or not self._mark(handle, status, error) or not self._live(handle):
            return
        if status == "failed":
            handle._mux.fail(RuntimeError(error or "Subgraph failed"))  # pyright: ignore[reportPrivateUsage]
        else:
            handle._mux.close()  # pyright: ignore[reportPrivateUsage]

    def process(self, event: ProtocolEvent) -> bool:
        # the base class's bookkeeping first: a started subgraph has its handle before its events go there
        keep = True
        if event["method"] == "tasks":
            keep = False
            ns = tuple(event["params"]["namespace"])
            data: object = event["params"]["data"]
            if is_str_mapping(data) and "result" in data:
                for child, status, error in self._pop_terminal_transitions(ns, data):
                    self._on_terminal(child, status, error)
            elif is_str_mapping(data):
                payload = data
                self._record_identity(ns, payload)
                self._record_pending_tool_calls(payload)
                self._handle_task_start(ns, payload)
        handle = self._handle_for_event(event)
        if handle is not None:
            handle._observe_event(event)  # pyright: ignore[reportPrivateUsage]
            handle._mux.push(event)  # pyright: ignore[reportPrivateUsage]
        return keep

    def finalize(self) -> None:
        first: BaseException | None = None
        for handle in self._sweep():
            try:
                handle._mux.close()  # pyright: ignore[reportPrivateUsage]
            except BaseException as exc:  # noqa: BLE001 - the others close first
                first = first or exc
        if first is not None:
            raise first

    def fail(self, err: BaseException) -> None:
        for handle in self._failing(err):
            try:
                handle._mux.fail(err)  # pyright: ignore[reportPrivateUsage]
            except Exception:
                _log.warning("could not fail the run of subgraph %s", handle.path, exc_info=True)

    # <<< generated sync
