"""Process-local thread locks and the errors of leases and head checks (used by every saver)."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from contextlib import AbstractContextManager
from typing import Any

from plait.errors import CheckpointConflictError, ThreadBusyError

__all__ = ["LocalLease", "busy", "check_head", "local_lock", "reentered", "stamp_of"]


def stamp_of(cid: str) -> int:
    """The time stamp (first 60 bits) of a UUID-shaped id; 0 for ids of another shape."""
    digits = cid.replace("-", "")
    if len(digits) != 32:
        return 0
    try:
        return int(digits[:15], 16)
    except ValueError:
        return 0


_locks: dict[Hashable, list[Any]] = {}
_locks_lock = threading.Lock()


def busy(thread_id: str) -> ThreadBusyError:
    """The error raised when a thread is held by another run."""
    return ThreadBusyError(
        f"Thread {thread_id!r} is busy: another run holds it. Wait for it to finish, or invoke with "
        "multitask_strategy='enqueue' (the default) to wait your turn.",
        thread_id=thread_id,
    )


def reentered(thread_id: str) -> ThreadBusyError:
    """The error raised when a run would wait for a thread that its own run chain holds."""
    return ThreadBusyError(
        f"Thread {thread_id!r} is held by the run this call is made from: a node started a run on its own "
        "thread_id, which would wait for itself forever. Use another thread_id, or invoke the graph without "
        "a thread_id inside the node so that it runs as a subgraph of this thread.",
        thread_id=thread_id,
    )


def local_lock(name: Hashable) -> AbstractContextManager[threading.Lock]:
    """The process-wide lock named ``name`` (a lease id), listed only while someone holds or waits for it.

    Entries are ``[lock, users]``, so the table stays as small as the number of threads in
    use, however many threads a long-lived process has run. (A class, not a generator: a run
    takes one per lease.)
    """
    return _Users(name)


class _Users(AbstractContextManager[threading.Lock]):
    """Counts a user of the lock named ``name`` while the ``with`` block runs; enters as the lock."""

    __slots__ = ("_entry", "_name")

    def __init__(self, name: Hashable) -> None:
        self._name = name
        self._entry: list[Any] | None = None

    def __enter__(self) -> threading.Lock:
        with _locks_lock:
            entry = _locks.get(self._name)
            if entry is None:
                entry = _locks[self._name] = [threading.Lock(), 0]
            entry[1] += 1
        self._entry = entry
        lock: threading.Lock = entry[0]
        return lock

    def __exit__(self, *exc_info: object) -> None:
        entry, self._entry = self._entry, None
        if entry is None:
            return
        with _locks_lock:
            entry[1] -= 1
            if entry[1] == 0 and _locks.get(self._name) is entry:
                del _locks[self._name]


class LocalLease(AbstractContextManager[None]):
    """The default lease of a thread (a saver's :meth:`~plait.checkpoint.base.BaseCheckpointSaver.lease`):
    the process-wide lock of its lease id, held while the ``with`` block runs.

    Raises:
        ThreadBusyError: (entering) the thread is held and ``wait`` is false or ``timeout`` passed.
    """

    __slots__ = ("_lock", "_thread_id", "_timeout", "_users", "_wait")

    def __init__(self, name: Hashable, thread_id: str, wait: bool, timeout: float | None) -> None:
        self._users = _Users(name)
        self._thread_id, self._wait, self._timeout = thread_id, wait, timeout
        self._lock: threading.Lock | None = None

    def __enter__(self) -> None:
        users = self._users
        lock = users.__enter__()
        try:
            got = lock.acquire(self._wait, -1 if self._timeout is None else self._timeout)
        except BaseException:
            users.__exit__(None, None, None)
            raise
        if not got:
            users.__exit__(None, None, None)
            raise busy(self._thread_id)
        self._lock = lock

    def __exit__(self, *exc_info: object) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()
            self._users.__exit__(None, None, None)


def check_head(thread_id: str, cid: str, expected: str | None, head: str | None) -> None:
    """Refuse a write that would not become the thread head as its writer expects.

    Raises:
        CheckpointConflictError: the head moved (``head`` is not ``expected``), or
            ``cid`` does not sort after it (the writer's clock is behind: clock skew).
    """
    if head != expected:
        raise CheckpointConflictError(
            f"Thread {thread_id!r} moved on while this run was writing: expected head {expected!r}, found "
            f"{head!r}. Another run or update_state wrote to the thread; nothing was written. Re-read the "
            "thread (get_state) and retry, or fork explicitly from a checkpoint_id.",
            thread_id=thread_id,
            expected=expected,
            actual=head,
        )
    if head is not None and cid <= head and not 0 < stamp_of(head) < (1 << 60) - 1:
        raise CheckpointConflictError(
            f"The head {head!r} of thread {thread_id!r} is not a time-ordered checkpoint id, and "
            f"{cid!r} sorts before it, so it would not become the newest checkpoint; nothing was written. "
            "plait orders a thread's checkpoints by id: write checkpoints with ids from "
            "plait.checkpoint.base.new_checkpoint_id(), or start a new thread.",
            thread_id=thread_id,
            expected=expected,
            actual=head,
        )
    if head is not None and cid <= head:
        raise CheckpointConflictError(
            f"Checkpoint id {cid!r} does not sort after the head {head!r} of thread {thread_id!r}, so it would "
            "not become the newest checkpoint; nothing was written. Checkpoint ids are time-ordered: the clock "
            "of the process that made this id is behind the one that wrote the head (clock skew). Make ids "
            "with plait.checkpoint.base.new_checkpoint_id(after=head).",
            thread_id=thread_id,
            expected=expected,
            actual=head,
        )
