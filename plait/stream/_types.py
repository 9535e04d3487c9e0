"""The protocol event and the transformer interface of the v3 event stream.

A run streamed with ``stream_events(version="v3")`` turns every stream part of
the graph into a :class:`ProtocolEvent` and hands it to each registered
:class:`StreamTransformer`; transformers project the events they care about
into channels (``run.values``, ``run.messages``, ``run.tool_calls``…).
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from typing import Any, ClassVar, Literal, TypeVar

from typing_extensions import NotRequired, TypedDict

__all__ = [
    "LifecycleCause",
    "LifecyclePayload",
    "ProtocolEvent",
    "ProtocolEventParams",
    "StreamTransformer",
    "SubgraphStatus",
    "needs_async",
]

_log = logging.getLogger("plait.stream")
_T = TypeVar("_T")


class ProtocolEventParams(TypedDict):
    """The body of a protocol event."""

    namespace: list[str]
    """Where the event comes from: ``[]`` for the root graph, one segment per subgraph level."""
    timestamp: int
    """Milliseconds since the epoch when the event was made."""
    data: Any
    """The payload of the stream part (a state, an update, a message event…)."""
    interrupts: NotRequired[tuple[Any, ...]]
    """The pending interrupts (``values`` events only)."""


class ProtocolEvent(TypedDict):
    """One event of a v3 run: a stream part of the graph, in wire form."""

    type: Literal["event"]
    method: str
    """The stream mode the event belongs to (``values``, ``messages``, ``tools``…), or
    ``custom:<name>`` for items of a named :class:`~plait.stream.StreamChannel`."""
    params: ProtocolEventParams
    seq: NotRequired[int]
    """Position in the run's main event log (set when the event enters it)."""


SubgraphStatus = Literal["started", "completed", "failed", "interrupted", "drained"]
"""Where a subgraph run is in its life."""


class LifecycleCause(TypedDict, total=False):
    """What made a subgraph start: ``{"type": "toolCall", "tool_call_id": ...}`` for a subagent
    a tool call dispatched."""

    type: str
    tool_call_id: str
    from_node: str


class LifecyclePayload(TypedDict, total=False):
    """An item of ``run.lifecycle`` (and the data of a ``lifecycle`` event of the main log)."""

    event: SubgraphStatus
    namespace: list[str]
    graph_name: NotRequired[str]
    trigger_call_id: NotRequired[str]
    """The id of the parent task that runs the subgraph (the part after ``:`` of its segment)."""
    cause: NotRequired[LifecycleCause]
    error: NotRequired[str]


class StreamTransformer(ABC):
    """Projects protocol events into channels a run exposes.

    Subclass it, return the projections from :meth:`init` (name -> channel or any
    object) and handle events in :meth:`process`. Transformers are given to
    ``stream_events(version="v3", transformers=[...])`` (or ``compile(transformers=...)``)
    as classes or ``factory(scope)`` callables: one instance is made per run.

    Class attributes:
        required_stream_modes: The graph stream modes the transformer needs; the run
            asks the graph for the union of those of its transformers.
        requires_async: Only usable in ``astream_events`` (it uses :meth:`schedule`).
        supports_sync: It overrides async hooks (``aprocess``…) but runs in sync runs too (without
            it, overriding one makes the transformer async-only).
        before_builtins: Run before the built-in transformers (e.g. to redact events).
        _native: Its projections become attributes of the run (``run.<name>``), not only
            entries of ``run.extensions``.

    Args:
        scope: The namespace the transformer projects (``()``: the root graph).
    """

    required_stream_modes: ClassVar[tuple[str, ...]] = ()
    requires_async: ClassVar[bool] = False
    supports_sync: ClassVar[bool] = False
    before_builtins: ClassVar[bool] = False
    _native: ClassVar[bool] = False

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        self.scope = tuple(scope)

    @abstractmethod
    def init(self) -> dict[str, Any]:
        """The projections this transformer contributes, by name."""

    def _on_register(self, mux: object) -> None:  # noqa: B027 - an optional hook
        """Called once the mux has registered this transformer (``mux`` is the :class:`StreamMux`)."""

    def process(self, event: ProtocolEvent) -> bool:
        """Handle one event; return ``False`` to keep it out of the run's main event log."""
        return True

    async def aprocess(self, event: ProtocolEvent) -> bool:
        """Async :meth:`process` (async runs await it before the next transformer sees the event)."""
        return self.process(event)

    def finalize(self) -> None:  # noqa: B027 - an optional hook
        """The run ended normally."""

    async def afinalize(self) -> None:
        """Async :meth:`finalize` (called after every task of :meth:`schedule` finished)."""
        self.finalize()

    def fail(self, err: BaseException) -> None:  # noqa: B027 - an optional hook
        """The run failed with ``err``."""

    async def afail(self, err: BaseException) -> None:
        """Async :meth:`fail`."""
        self.fail(err)

    def schedule(
        self, coro: Coroutine[object, object, _T], *, on_error: Literal["log", "raise"] = "log"
    ) -> asyncio.Task[_T | None]:
        """Run ``coro`` as a task of this run; the run waits for it before it finalizes.

        Args:
            coro: The work.
            on_error: ``"log"``: an exception is logged and dropped; ``"raise"``: it fails the run.

        Raises:
            RuntimeError: no event loop is running (schedule needs an async run).
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                f"{type(self).__name__}.schedule() requires a running event loop (use astream_events)"
            ) from None
        task = loop.create_task(self._guarded(coro, on_error))
        self._scheduled_tasks().add(task)
        return task

    async def _guarded(self, coro: Coroutine[object, object, _T], on_error: str) -> _T | None:
        try:
            return await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            if on_error == "raise":
                raise
            _log.exception("scheduled work of %s failed", type(self).__name__)
            return None

    def _scheduled_tasks(self) -> set[asyncio.Task[object]]:
        # made on first use: subclasses need not call ``super().__init__()``
        tasks: set[asyncio.Task[object]] = vars(self).setdefault("_plait_tasks", set())
        return tasks


def needs_async(transformer: StreamTransformer) -> bool:
    """Whether ``transformer`` can only run in an async run: it says so (``requires_async``), or it
    overrides an async hook (``aprocess``, ``afinalize``, ``afail``) without ``supports_sync``."""
    if transformer.requires_async:
        return True
    if transformer.supports_sync:
        return False
    kind = type(transformer)
    return any(getattr(kind, name) is not getattr(StreamTransformer, name) for name in _ASYNC_HOOKS)


_ASYNC_HOOKS = ("aprocess", "afinalize", "afail")
