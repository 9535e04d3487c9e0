"""The ``runtime`` object nodes can ask for: run context, store, stream writer, run control.

Also the run-scoped records it carries: :class:`ExecutionInfo` (where the node runs),
:class:`ServerInfo` (what a LangGraph server says about the run) and :class:`RunControl`
(a cooperative "stop at the next step boundary" switch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast

from plait._context import current_task
from plait._internal._constants import (  # noqa: F401 - LangGraph code imports them from here
    CONF,  # pyright: ignore[reportUnusedImport]
    CONFIG_KEY_RUNTIME,  # pyright: ignore[reportUnusedImport]
)

__all__ = ["ExecutionInfo", "RunControl", "Runtime", "ServerInfo", "get_runtime"]

C = TypeVar("C")


def _drop(_: object) -> None:
    return None


def _beat() -> None:
    return None


@dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """Where and how the current node runs.

    Attributes:
        checkpoint_id: The checkpoint the task's step starts from.
        checkpoint_ns: The task's namespace (``node:task_id``, nested with ``|`` in subgraphs).
        task_id: The task's id.
        thread_id: The thread, when the run has a checkpointer and a ``thread_id``.
        run_id: The run id from the config, if any.
        node_attempt: 1 for the first attempt, then 2, 3 ... under a retry policy.
        node_first_attempt_time: ``time.time()`` when the first attempt started.
    """

    checkpoint_id: str
    checkpoint_ns: str
    task_id: str
    thread_id: str | None = None
    run_id: str | None = None
    node_attempt: int = 1
    node_first_attempt_time: float | None = None

    def patch(self, **overrides: Any) -> ExecutionInfo:
        """A copy with ``overrides`` replacing fields (the original is unchanged)."""
        return replace(self, **overrides)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What a LangGraph server tells the run (from ``configurable``); ``None`` outside a server.

    Attributes:
        assistant_id: The assistant running the graph.
        graph_id: The graph's id on the server.
        user: The authenticated user (an object with an ``identity``), if any.
    """

    assistant_id: str
    graph_id: str
    user: Any = None


class RunControl:
    """Asks a running graph to stop cooperatively (e.g. on SIGTERM).

    After :meth:`request_drain`, the run finishes the step in progress, saves its checkpoint
    and raises :class:`~plait.errors.GraphDrained` instead of starting another step; a later
    ``invoke(None, config)`` continues it. Thread-safe: any thread or task may call it.
    """

    __slots__ = ("_reason", "_requested")

    _guard = threading.Lock()  # one for all controls: requests are rare, checks read one flag

    def __init__(self) -> None:
        self._requested = False
        self._reason: str | None = None

    def request_drain(self, reason: str = "shutdown") -> None:
        """Ask the run to stop before its next step (the first reason given is kept)."""
        with RunControl._guard:
            if not self._requested:
                self._reason = reason
                self._requested = True

    @property
    def drain_requested(self) -> bool:
        """Whether :meth:`request_drain` was called."""
        return self._requested

    @property
    def drain_reason(self) -> str | None:
        """The reason given to :meth:`request_drain`, or ``None``."""
        return self._reason

    def __repr__(self) -> str:
        return f"RunControl(drain_requested={self.drain_requested}, drain_reason={self._reason!r})"


@dataclass(frozen=True, slots=True)
class Runtime(Generic[C]):
    """What a node receives as its ``runtime`` keyword argument.

    Attributes:
        context: The ``context`` passed to invoke/stream (see ``context_schema``).
        store: The long-term store given to ``compile()``, or ``None``.
        stream_writer: Emits ``custom`` stream events.
        heartbeat: Signals that a long-running node is alive (a no-op outside a server).
        previous: The previous return value of an ``entrypoint`` on this thread (functional API).
        execution_info: Where the node runs (``None`` outside a run).
        server_info: What a LangGraph server says about the run, or ``None``.
        control: The run's :class:`RunControl` (``None`` outside a run).
    """

    context: C | None = None
    store: Any = None
    stream_writer: Callable[[Any], None] = _drop
    heartbeat: Callable[[], None] = _beat
    previous: Any = None
    execution_info: ExecutionInfo | None = None
    server_info: ServerInfo | None = None
    control: RunControl | None = field(default=None)

    def merge(self, other: Runtime[C]) -> Runtime[C]:
        """``other``'s values where it has them (truthy / not the default), else this one's."""
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=other.stream_writer if other.stream_writer is not _drop else self.stream_writer,
            heartbeat=other.heartbeat if other.heartbeat is not _beat else self.heartbeat,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
            control=other.control or self.control,
        )

    def override(self, **overrides: Any) -> Runtime[C]:
        """A copy with ``overrides`` replacing fields.

        Raises:
            TypeError: a name that is not a field of ``Runtime``.
        """
        return replace(self, **overrides)

    def patch_execution_info(self, **overrides: Any) -> Runtime[C]:
        """A copy whose ``execution_info`` has ``overrides`` replacing fields.

        Raises:
            RuntimeError: there is no ``execution_info`` to patch yet.
        """
        if self.execution_info is None:
            raise RuntimeError("Runtime.execution_info is not set, so there is nothing to patch")
        return replace(self, execution_info=self.execution_info.patch(**overrides))

    @property
    def drain_requested(self) -> bool:
        """Whether the run was asked to drain (see :class:`RunControl`)."""
        return self.control is not None and self.control.drain_requested

    @property
    def drain_reason(self) -> str | None:
        """Why the run was asked to drain, or ``None``."""
        return None if self.control is None else self.control.drain_reason


def get_runtime(context_schema: type[C] | None = None) -> Runtime[C]:
    """The runtime of the node running in this thread or coroutine.

    Raises:
        RuntimeError: called outside a running node.
    """
    task = current_task()
    make = getattr(task, "runtime", None)
    if callable(make):
        return cast("Runtime[C]", make())
    return Runtime(context=task.context, store=task.store, stream_writer=task.writer)
