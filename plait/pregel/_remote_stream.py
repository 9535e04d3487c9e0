"""The stream of a :class:`~plait.pregel.remote.RemoteGraph` run: which modes it asks the server
for, and what each server event becomes (a chunk for the caller, an event in the stream of the
graph it runs in, an interrupt, an error)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from plait._internal._constants import INTERRUPT, NS_SEP
from plait._internal._narrow import is_sequence, is_str_dict
from plait.errors import GraphInterrupt, ParentCommand
from plait.pregel._context import running_task
from plait.pregel._options import version_of
from plait.pregel._remote_wire import command_body, configurable, interrupt_of
from plait.pregel._root import is_command
from plait.types import Command, GraphOutput, Interrupt

__all__ = [
    "SKIP",
    "Caller",
    "ChunkReader",
    "Modes",
    "RemoteException",
    "answer_interrupt",
    "caller_of",
    "may_resume",
    "missing",
    "no_bulk_update",
    "run_input",
    "run_output",
]

_log = logging.getLogger("plait.pregel.remote")

SKIP: object = object()
"""What :meth:`ChunkReader.read` returns for an event the caller did not ask for."""

_API_MODES = frozenset({"values", "updates", "messages", "custom", "debug", "tasks", "checkpoints"})
"""Modes of a parent graph's stream that a remote run can feed (the agent server API's)."""

_COMMAND_FIELDS = ("graph", "update", "resume", "goto")


class RemoteException(Exception):
    """The remote run failed: ``args[0]`` is the server's error event (``{"error": ..., "message": ...}``)."""


@dataclass(frozen=True)
class Modes:
    """The stream modes of one remote run.

    Attributes:
        sent: What the server is asked for (``updates`` always: interrupts show there).
        requested: What the caller yields (``messages`` for ``messages-tuple``).
        single: One mode was asked for: chunks are its payloads alone.
    """

    sent: list[str]
    requested: frozenset[str]
    single: bool

    @classmethod
    def of(cls, stream_mode: str | Sequence[str] | None, parent: frozenset[str], default: str) -> Modes:
        """The modes for ``stream_mode`` (``default`` when none), plus those ``parent`` streams."""
        single = not stream_mode or isinstance(stream_mode, str)
        asked = (
            [default]
            if not stream_mode
            else [stream_mode]
            if isinstance(stream_mode, str)
            else list(stream_mode)
        )
        requested = frozenset("messages" if m == "messages-tuple" else m for m in asked)
        sent: list[str] = []
        for mode in [*asked, *sorted(parent & _API_MODES), "updates"]:
            mode = "messages-tuple" if mode == "messages" else mode
            if mode != "events" and mode not in sent:
                sent.append(mode)
        return cls(sent, requested, single)


@dataclass(frozen=True)
class Caller:
    """Where a remote run is started from.

    Attributes:
        ns: The namespace of the task it runs in (``()``: not inside a graph run).
        forward: Hands an event ``(mode, payload, namespace)`` to the stream of the graph it runs
            in, when that graph streams its subgraphs; else ``None``.
        modes: The modes that stream has.
        resume: Answers the task was resumed with (its remote run answers the newest).
    """

    ns: tuple[str, ...] = ()
    forward: Callable[[tuple[object, ...]], None] | None = None
    modes: frozenset[str] = frozenset()
    resume: list[object] = field(default_factory=lambda: [])

    @property
    def nested(self) -> bool:
        """The run is part of a graph's task: its interrupts pause that task."""
        return bool(self.ns)


def caller_of(config: Mapping[str, object] | None) -> Caller:
    """The graph task the remote run is part of: the running plait task, or the one a LangGraph
    config locates (``configurable.checkpoint_ns``)."""
    given = str(configurable(config).get("checkpoint_ns") or "")
    task = running_task()
    if task is None:
        return Caller(ns=tuple(given.split(NS_SEP)) if given else ())
    ns = given or task.namespace
    sink = task.stream
    if sink is None:
        return Caller(ns=tuple(ns.split(NS_SEP)), resume=list(task.resume))
    forward = partial(sink.forward, segment=f"{task.node}:{task.task_id}")
    return Caller(tuple(ns.split(NS_SEP)), forward, frozenset(sink.modes), list(task.resume))


def run_input(input: object) -> tuple[object, dict[str, object] | None]:  # noqa: A002 - LangGraph's name
    """A run's ``input`` and ``command`` for what the caller passed."""
    if is_command(input):
        return None, command_body(input)
    return input, None


def _as_dict(data: object) -> dict[str, object]:
    """``data`` when it is a JSON object, else an empty dict."""
    return data if is_str_dict(data) else {}


def _interrupts(found: object) -> tuple[Interrupt, ...]:
    """The interrupts of a JSON list (an event's ``__interrupt__``)."""
    return tuple(interrupt_of(i) for i in found) if is_sequence(found) else ()


def _split(event: str) -> tuple[str, tuple[str, ...]]:
    mode, sep, rest = event.partition(NS_SEP)
    return mode, tuple(rest.split(NS_SEP)) if sep else ()


class ChunkReader:
    """Turns each event of a remote run's stream into what the caller yields.

    Args:
        modes: The run's stream modes.
        caller: Where the run was started from.
        subgraphs: The caller asked for the remote subgraphs' events.
        v2: Chunks are typed stream parts (``version="v2"``).
    """

    def __init__(self, modes: Modes, caller: Caller, subgraphs: bool, v2: bool) -> None:
        self.modes = modes
        self.caller = caller
        self.subgraphs = subgraphs
        self.v2 = v2

    def read(self, chunk: Any) -> object:
        """The caller's chunk for one server event, or :data:`SKIP`.

        Raises:
            GraphInterrupt: the remote graph paused, and it runs inside a graph's task.
            ParentCommand: the remote graph sent a command to its parent.
            RemoteException: the remote run failed.
        """
        mode, own_ns = _split(str(chunk.event))
        data: object = chunk.data
        if mode == "command" and _as_dict(data).get("graph") == Command.PARENT:
            fields: dict[str, Any] = {k: v for k, v in _as_dict(data).items() if k in _COMMAND_FIELDS}
            raise ParentCommand(Command(**fields))
        caller = self.caller
        if caller.forward is not None and mode in caller.modes:
            caller.forward((mode, data, own_ns))
        self._check(mode, data)
        if mode not in self.modes.requested:
            return SKIP
        if own_ns and not self.subgraphs and mode != "messages":  # asked for only to feed the parent
            return SKIP
        if mode == "messages" and is_sequence(data):
            data = tuple(data)
            chunk = chunk._replace(data=data) if hasattr(chunk, "_replace") else chunk
        return self._shape(mode, caller.ns + own_ns, data, chunk)

    def _check(self, mode: str, data: object) -> None:
        if mode == "error":
            raise RemoteException(data)
        if mode == "updates" and INTERRUPT in _as_dict(data) and self.caller.nested:
            raise GraphInterrupt(_interrupts(_as_dict(data)[INTERRUPT]))

    def _shape(self, mode: str, ns: tuple[str, ...], data: object, chunk: Any) -> object:
        if self.v2:
            interrupts: tuple[Interrupt, ...] = ()
            values = _as_dict(data)
            if mode == "values" and INTERRUPT in values:
                interrupts = _interrupts(values[INTERRUPT])
                data = {k: v for k, v in values.items() if k != INTERRUPT}
            part: dict[str, object] = {"type": mode, "ns": ns, "data": data, "interrupts": interrupts}
            return part
        if self.subgraphs:
            return (ns, data) if self.modes.single else (ns, mode, data)
        return data if self.modes.single else chunk


def run_output(last: Any, version: object) -> object:
    """What ``invoke`` returns: the run's last ``values`` chunk (a ``GraphOutput`` with ``version="v2"``)."""
    if last is SKIP:
        _log.warning("No events received from remote graph")
        return None
    if version_of(version):
        return GraphOutput(value=last["data"], interrupts=tuple(last.get("interrupts", ())))
    return last


def may_resume(caller: Caller, request: Mapping[str, object]) -> bool:
    """The run is a resumed task's, on a thread, with plain input: it may answer the remote interrupt."""
    return caller.nested and bool(caller.resume) and bool(request["thread_id"]) and request["command"] is None


def answer_interrupt(request: dict[str, object], caller: Caller, state: Mapping[str, Any] | None) -> None:
    """Resume the remote thread with the task's newest answer, when it waits on an interrupt."""
    tasks = (state or {}).get("tasks") or ()
    if any(task.get("interrupts") for task in tasks):
        request["input"] = None
        request["command"] = {"resume": caller.resume[-1]}


def missing(exc: Exception) -> bool:
    """The server answered 404 (no such thread)."""
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None) == 404


def no_bulk_update(method: str, instead: str) -> str:
    """The error of ``bulk_update_state`` on a remote graph, which has none (as in LangGraph)."""
    return f"RemoteGraph.{method}: call {instead} once per update"
