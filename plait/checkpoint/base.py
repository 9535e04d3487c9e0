"""The checkpoint saver interface shared by every backend.

A *thread* is a chain of checkpoints, one per superstep, each pointing at its
parent. A run loads the newest checkpoint of its thread (or the one named by
``checkpoint_id``), runs, and saves a new checkpoint after each superstep.

To write a backend, subclass :class:`BaseCheckpointSaver` and implement
``get_tuple``, ``list``, ``put``, ``put_writes`` and ``delete_thread`` (and the
``a``-prefixed async twins, or inherit the defaults, which call the sync ones).

``put`` receives the whole state in ``checkpoint["channel_values"]`` but only
the keys in ``new_versions`` changed since the parent checkpoint: a backend
should store those and take the others from the parent. Values are live
objects shared with the run; a backend must not mutate them.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any, NamedTuple, cast

from plait._internal._constants import ERROR, INTERRUPT, RESUME  # pending-write keys, as LangGraph's
from plait.checkpoint._config import (
    MAX_ID_BYTES,
    MAX_NS_BYTES,
    check_thread_id,
    configurable_of,
    get_checkpoint_id,
    thread_key,
)
from plait.checkpoint._locks import busy, local_lock
from plait.checkpoint._make import (
    copy_checkpoint,
    create_checkpoint,
    new_checkpoint_id,
    now_iso,
)
from plait.checkpoint._types import ChannelVersions, Checkpoint, CheckpointMetadata
from plait.checkpoint.serde.jsonplus import JsonPlusSerializer
from plait.errors import EmptyChannelError

__all__ = [
    "BaseCheckpointSaver",
    "ChannelVersions",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointTuple",
    "ERROR",
    "EmptyChannelError",
    "INTERRUPT",
    "MAX_ID_BYTES",
    "MAX_NS_BYTES",
    "PendingWrite",
    "RESUME",
    "ThreadInfo",
    "check_prune",
    "check_thread_id",
    "config_metadata",
    "configurable_of",
    "copy_checkpoint",
    "create_checkpoint",
    "empty_checkpoint",
    "get_checkpoint_id",
    "new_checkpoint_id",
    "now_iso",
    "recorded_metadata",
    "thread_key",
]

FORMAT_VERSION = 1


PendingWrite = tuple[str, str, Any]
"""``(task_id, key, value)``: a write of a task whose step has not completed."""


class CheckpointTuple(NamedTuple):
    """A checkpoint with its config, metadata, parent and pending writes."""

    config: dict[str, Any]
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    parent_config: dict[str, Any] | None = None
    pending_writes: list[PendingWrite] | None = None


class ThreadInfo(NamedTuple):
    """A thread as listed by :meth:`BaseCheckpointSaver.threads`."""

    thread_id: str
    checkpoints: int
    head_id: str
    step: int
    updated_at: str


def check_prune(keep_last: object, older_than: object) -> None:
    """Validate ``prune`` arguments.

    Raises:
        ValueError: neither is given, ``keep_last`` is not an int >= 1, or ``older_than`` is negative.
    """
    if keep_last is None and older_than is None:
        raise ValueError("prune() needs keep_last=N and/or older_than=seconds; nothing would be deleted")
    if keep_last is not None and (
        isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1
    ):
        raise ValueError(
            f"prune(keep_last=...) must be an int >= 1 (the newest checkpoint is always kept), "
            f"got {keep_last!r}"
        )
    if older_than is not None and (
        isinstance(older_than, bool) or not isinstance(older_than, (int, float)) or older_than < 0
    ):
        raise ValueError(f"prune(older_than=...) must be a number of seconds >= 0, got {older_than!r}")


def empty_checkpoint() -> Checkpoint:
    """A checkpoint with no values, for a thread's first step."""
    return Checkpoint(
        v=FORMAT_VERSION,
        id=new_checkpoint_id(),
        ts=now_iso(),
        channel_values={},
        channel_versions={},
        updated_channels=[],
        next=[],
        sends=[],
        barriers={},
        interrupts=[],
    )


TASK_KEYS = frozenset(
    {"langgraph_step", "langgraph_node", "langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns"}
)
"""Metadata keys a node's config holds about its task: never recorded in a checkpoint's metadata."""

NOT_METADATA = TASK_KEYS | {"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"}
"""Configurable keys never copied into a checkpoint's metadata (they locate it, or name a task)."""

_NOT_FROM_METADATA = NOT_METADATA - {"thread_id"}


def config_metadata(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's checkpoints record of its config, as LangGraph's savers do.

    Each entry of the config's ``metadata``, then of its ``configurable`` (the user's own keys,
    such as ``user_id``), whose value is a plain ``str``, ``int``, ``float`` or ``bool``; never
    private ``__`` keys nor those of :data:`NOT_METADATA`. A ``metadata`` key wins over the same
    ``configurable`` one. Unlike LangGraph's library, a ``thread_id`` given in ``metadata`` is kept
    (its server records it too).
    """
    out: dict[str, Any] = {}
    for source, skip in (
        (config.get("metadata"), _NOT_FROM_METADATA),
        (config.get("configurable"), NOT_METADATA),
    ):
        given: Mapping[str, Any] = source or {}
        for key, value in given.items():
            if key not in out and key not in skip and not key.startswith("__"):
                if isinstance(value, (str, int, float, bool)):
                    out[key] = value
    return out


def recorded_metadata(config: Mapping[str, Any], metadata: CheckpointMetadata) -> CheckpointMetadata:
    """``metadata`` as a saver's ``put(config, …)`` stores it: what :func:`config_metadata` records
    of ``config`` is added under it (a saver's own keys win); unchanged when there is nothing to add."""
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    if not config.get("metadata") and all(k in NOT_METADATA or k.startswith("__") for k in configurable):
        return metadata
    return cast("CheckpointMetadata", {**config_metadata(config), **metadata})


class BaseCheckpointSaver(ABC):
    """Stores and loads the checkpoints of threads. Subclass it to add a backend.

    Args:
        serde: The serializer for values (LangGraph's ``serde`` argument); plait's safe codec
            when omitted.
    """

    serde: Any = None
    """The value serializer (``dumps_typed``/``loads_typed``), for savers that store bytes themselves."""

    def __class_getitem__(cls, item: object) -> type[BaseCheckpointSaver]:
        """``BaseCheckpointSaver[str]``, as LangGraph code annotates savers by their version type: the class."""
        return cls

    def __init__(self, *, serde: Any = None) -> None:
        self.serde = serde if serde is not None else _default_serde()

    def get_next_version(self, current: int | None, channel: None = None) -> int:
        """The version a channel gets when its value changes (1 for a new channel).

        Override it to version channels differently; the runtime calls the override for every change.
        """
        if current is None:
            return 1
        if isinstance(current, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # stored by another saver
            raise NotImplementedError(
                f"{type(self).__name__} got string channel version {current!r}: override get_next_version"
            )
        return current + 1

    @abstractmethod
    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The checkpoint ``config`` addresses: its ``checkpoint_id``, or the thread's newest."""

    @abstractmethod
    def list(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints of a thread, newest first, lazily.

        Args:
            config: Selects the thread and namespace; without a ``checkpoint_ns`` every
                namespace of the thread, ``None`` every thread.
            filter: Only checkpoints whose metadata has these key/value pairs.
            before: Only checkpoints older than this config's checkpoint.
            limit: At most this many.
        """

    supports_head_check: bool = False
    """Set by savers whose ``put``/``aput`` accept ``expected_head`` (compare-and-set on the thread head)."""

    writes_by_serde: bool = False
    """Set by savers that store each write as ``self.serde.dumps(value)`` (a run checks its input with it
    before storing anything, see ``plait.pregel._input.check_storable``)."""

    @abstractmethod
    def put(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
    ) -> dict[str, Any]:
        """Store ``checkpoint`` as the child of the one ``config`` addresses; return its config.

        Savers with ``supports_head_check = True`` also take a keyword-only
        ``expected_head`` (a checkpoint id, or ``None`` for "the thread is
        empty"): if the thread's newest checkpoint is another one, nothing is
        written and :class:`~plait.errors.CheckpointConflictError` is raised.
        """

    @abstractmethod
    def put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, object]], task_id: str, task_path: str = ""
    ) -> None:
        """Store the writes of one finished task of a step that has not completed yet."""

    @abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of ``thread_id``."""

    def lease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractContextManager[None]:
        """Hold ``thread_id`` for one run, so that two runs never interleave on a thread.

        The default lease is a lock in this process; backends shared by several
        processes override it (SQLite and PostgreSQL: a lease row renewed by a heartbeat,
        which expires after a TTL if the holder dies).

        Args:
            thread_id: The thread to hold.
            checkpoint_ns: The namespace within the thread.
            wait: Wait for the current holder (``False``: fail at once).
            timeout: Give up waiting after this many seconds (``None``: wait forever).

        Raises:
            ThreadBusyError: the thread is held and ``wait`` is false or the timeout passed.
        """
        return _local_lease(self, thread_id, checkpoint_ns, wait, timeout)

    async def alease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractAsyncContextManager[None]:
        """Async :meth:`lease`: returns an async context manager."""
        return _AsyncLease(self.lease(thread_id, checkpoint_ns, wait=wait, timeout=timeout))

    def lease_id(self, thread_id: str, checkpoint_ns: str = "") -> tuple[object, str, str]:
        """What :meth:`lease` holds for ``thread_id``: equal for two savers that share a lease.

        A run records the ids it holds, so a node that starts a run on its own
        thread gets a :class:`~plait.errors.ThreadBusyError` at once instead of
        waiting for itself.
        """
        return id(self), str(thread_id), checkpoint_ns or ""

    def threads(self) -> Iterator[ThreadInfo]:
        """Every thread with its checkpoint count and newest checkpoint (for inspectors).

        The default reads the whole ``list(None)``; database savers answer with one query.
        """
        seen: dict[str, ThreadInfo] = {}
        for item in self.list(None):
            thread_id, _, checkpoint_id = thread_key(item.config)
            info = seen.get(thread_id)
            if info is None:
                seen[thread_id] = ThreadInfo(
                    thread_id,
                    1,
                    checkpoint_id or "",
                    int(item.metadata.get("step", -1)),
                    item.checkpoint.get("ts", ""),
                )
            else:
                seen[thread_id] = info._replace(checkpoints=info.checkpoints + 1)
        yield from seen.values()

    def prune(self, thread_id: str, *, keep_last: int | None = None, older_than: float | None = None) -> int:
        """Delete old checkpoints of a thread; return how many were deleted.

        The newest checkpoint is always kept, and so is everything a kept
        checkpoint needs to be read back whole.

        Args:
            thread_id: The thread to prune.
            keep_last: Keep this many newest checkpoints.
            older_than: Delete checkpoints older than this many seconds.
        """
        raise NotImplementedError(f"{type(self).__name__} does not support prune()")

    # -- the async defaults: the sync method, run in a worker thread (a saver may implement only the
    # sync API, LangGraph's contract); one source each, so nothing here is generated ------------

    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`, streamed: each item is read (in a worker thread) when it is awaited."""
        items = self.list(config, filter=filter, before=before, limit=limit)
        while True:
            item = await asyncio.to_thread(next, items, None)
            if item is None:
                return
            yield item

    async def aput(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Async :meth:`put` (``kwargs``: ``expected_head`` where supported)."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions, **kwargs)

    async def aput_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, object]], task_id: str, task_path: str = ""
    ) -> None:
        """Async :meth:`put_writes`."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    # >>> async source
    async def aget(self, config: dict[str, Any]) -> Checkpoint | None:
        """The checkpoint ``config`` addresses, without its metadata."""
        found = await self.aget_tuple(config)
        return None if found is None else found.checkpoint

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def get(self, config: dict[str, Any]) -> Checkpoint | None:
        """The checkpoint ``config`` addresses, without its metadata."""
        found = self.get_tuple(config)
        return None if found is None else found.checkpoint

    # <<< generated sync


@contextmanager
def _local_lease(
    saver: BaseCheckpointSaver, thread_id: str, ns: str, wait: bool, timeout: float | None
) -> Generator[None, None, None]:
    with local_lock(saver.lease_id(thread_id, ns)) as lock:
        if not lock.acquire(blocking=wait, timeout=-1 if timeout is None else timeout):
            raise busy(thread_id)
        try:
            yield
        finally:
            lock.release()


class _AsyncLease(AbstractAsyncContextManager[None]):
    """Runs a blocking lease's enter/exit in a worker thread."""

    def __init__(self, inner: AbstractContextManager[None]) -> None:
        self.inner = inner

    async def __aenter__(self) -> None:
        await asyncio.to_thread(self.inner.__enter__)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.inner.__exit__, exc_type, exc, tb)


def _default_serde() -> object:
    return JsonPlusSerializer()
