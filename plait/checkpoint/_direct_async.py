"""Async methods that call the sync ones on the event loop, for savers whose work never blocks (in memory).

The base class runs each sync call in a worker thread (``asyncio.to_thread``), which is right for a
database and pure overhead for a dict: an in-memory saver's calls take microseconds under a lock no
one holds for longer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any

from plait.checkpoint._calls import PutCheckpoint, SaveOp
from plait.checkpoint._locks import LocalLease, busy, local_lock

if TYPE_CHECKING:
    from plait.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple

__all__ = ["DirectAsync"]


def _sync(saver: object) -> Any:
    return saver  # (the saver this is mixed into has the sync methods)


_PLAIN: dict[type, bool] = {}


def _plain(kind: type) -> bool:
    """Whether ``kind`` saves with the methods of the class that mixes :class:`DirectAsync` in (a
    subclass overriding one of them must have it called, with the arguments it accepts)."""
    known = _PLAIN.get(kind)
    if known is None:
        mixer = next(k for k in kind.__mro__ if DirectAsync in k.__bases__)
        known = _PLAIN[kind] = all(
            getattr(kind, name) is getattr(mixer, name)
            for name in ("put", "put_writes", "aput", "aput_writes")
        )
    return known


class _LoopLease(AbstractAsyncContextManager[None]):
    """The process-local lease (:func:`~plait.checkpoint._locks.local_lock`) taken from the event loop.

    A free thread is taken at once, on the loop; only a held one is waited for, in a worker thread
    (the lock is shared with sync runs, whose release cannot wake the loop by itself).
    """

    __slots__ = ("_held", "_key", "_thread_id", "_timeout", "_wait")

    def __init__(self, key: Any, thread_id: str, wait: bool, timeout: float | None) -> None:
        self._key, self._thread_id, self._wait, self._timeout = key, thread_id, wait, timeout
        self._held: tuple[AbstractContextManager[threading.Lock], threading.Lock] | None = None

    async def __aenter__(self) -> None:
        users = local_lock(self._key)
        lock = users.__enter__()
        if lock.acquire(blocking=False):
            self._held = users, lock
            return
        if not self._wait:
            users.__exit__(None, None, None)
            raise busy(self._thread_id)
        limit = -1 if self._timeout is None else self._timeout
        waiting = asyncio.get_running_loop().run_in_executor(None, lock.acquire, True, limit)
        try:
            got = await asyncio.shield(waiting)
        except asyncio.CancelledError:  # the lock may still be taken by the waiting thread: give it back then

            def settle(done: asyncio.Future[bool]) -> None:
                if not done.cancelled() and done.exception() is None and done.result():
                    lock.release()
                users.__exit__(None, None, None)

            waiting.add_done_callback(settle)
            raise
        except BaseException:
            users.__exit__(None, None, None)
            raise
        if not got:
            users.__exit__(None, None, None)
            raise busy(self._thread_id)
        self._held = users, lock

    async def __aexit__(self, *exc: object) -> None:
        held, self._held = self._held, None
        if held is not None:
            held[1].release()
            held[0].__exit__(None, None, None)


class DirectAsync:
    """Mixed in before :class:`~plait.checkpoint.base.BaseCheckpointSaver`: ``a*`` methods call the sync ones.

    For savers that keep the default process-local lease: :meth:`alease` takes it on the loop.
    """

    # >>> async source
    async def alease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractAsyncContextManager[None]:
        """The default lease (a lock in this process), as one object: see ``BaseCheckpointSaver.lease``
        (async: a free thread is taken on the loop, with no worker-thread hop)."""
        return _LoopLease(_sync(self).lease_id(thread_id, checkpoint_ns), thread_id, wait, timeout)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def lease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractContextManager[None]:
        """The default lease (a lock in this process), as one object: see ``BaseCheckpointSaver.lease``
        (async: a free thread is taken on the loop, with no worker-thread hop)."""
        return LocalLease(_sync(self).lease_id(thread_id, checkpoint_ns), thread_id, wait, timeout)

    # <<< generated sync

    async def _asave_many(self, calls: Sequence[SaveOp], release: object, before: object = None) -> bool:
        """A step's saves in one go, on the loop (no coroutine per call); ``False`` (nothing done)
        when a subclass overrides a saving method, whose override must then be called as usual.

        ``release``: an in-process lease is released by its ``alease`` block, nothing to do here.
        """
        if before is not None or not _plain(type(self)):
            return False
        saver = _sync(self)
        for call in calls:
            if type(call) is not PutCheckpoint:
                saver.put_writes(call.config, call.writes, call.task_id)  # type: ignore[union-attr]
            elif call.expected_head is ...:
                saver.put(call.config, call.checkpoint, call.metadata, call.versions)
            else:
                saver.put(
                    call.config,
                    call.checkpoint,
                    call.metadata,
                    call.versions,
                    expected_head=call.expected_head,
                )
        return True

    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`, on the loop."""
        found: CheckpointTuple | None = _sync(self).get_tuple(config)
        return found

    async def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`, on the loop."""
        for item in _sync(self).list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        **kwargs: object,
    ) -> dict[str, Any]:
        """Async :meth:`put`, on the loop."""
        saved: dict[str, Any] = _sync(self).put(config, checkpoint, metadata, new_versions, **kwargs)
        return saved

    async def aput_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, object]], task_id: str, task_path: str = ""
    ) -> None:
        """Async :meth:`put_writes`, on the loop."""
        _sync(self).put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`, on the loop."""
        _sync(self).delete_thread(thread_id)
