"""InMemorySaver's pending writes: a task's writes encoded, merged with those stored, and read back.

A checkpoint's pending writes are stored as one bytes blob, ``[[task_id, channel, value bytes], ...]``
(see :mod:`plait.checkpoint.memory`). The saver remembers the writes it stored last
(:class:`RecentWrites`): the next ``put_writes`` to the same checkpoint merges with them without
decoding the blob, and a read hands back the values that cannot change (text, numbers, ``None``,
bytes, an ``Interrupt`` of those, a list of those in a new list) without decoding them; any
other value is decoded from its bytes, so a stored write never changes whatever is done to the
values handed out or to those given to ``put_writes``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

from plait.checkpoint._records import ThreadLog
from plait.checkpoint.base import INTERRUPT, RESUME
from plait.errors import SerializationError
from plait.types import Interrupt

__all__ = ["DECODE", "SPECIAL", "RecentWrites", "encode_writes", "kept_writes", "read_writes", "shareable"]

SPECIAL = (INTERRUPT, RESUME)
"""Write keys kept when the task writes other keys, replaced when it writes them again."""

DECODE: object = object()
"""The share of a value that is read back by decoding its bytes."""

_ATOMS = frozenset({str, int, float, bool, type(None), bytes})


class _Listed(tuple[object, ...]):
    """The share of a list of unchangeable values: read back as a new list of them."""

    __slots__ = ()


def _atomic(value: Any) -> bool:
    kind = cast("type[object]", type(value))  # pyright takes type() of an Any for type[Unknown]
    if kind in _ATOMS:
        return True
    return (
        kind is Interrupt
        and type(value.value) in _ATOMS
        and type(value.id) in _ATOMS
        and type(value.response_schema) in _ATOMS
    )


def shareable(value: Any) -> object:
    """What a read of ``value`` can hand back instead of decoding it: the value itself when
    nothing in it can change (exact types only: what decoding gives back), a :class:`_Listed` of a
    short list of such values, else :data:`DECODE`."""
    if _atomic(value):
        return value
    if value.__class__ is list and len(value) <= 16 and all(map(_atomic, value)):  # (no narrowing of object)
        return _Listed(value)
    return DECODE


class RecentWrites(NamedTuple):
    """The pending writes stored last: of checkpoint ``seq`` of thread log ``th``.

    Attributes:
        th: The thread log (compared by identity).
        seq: The checkpoint.
        rows: ``[task_id, channel, value bytes]`` as stored (never changed once made).
        shares: Per row, what :func:`shareable` gave for its value.
    """

    th: ThreadLog | None
    seq: int
    rows: list[list[Any]]
    shares: list[object]

    def read(self, loads: Callable[[bytes], Any]) -> list[tuple[str, str, Any]]:
        """The writes, as ``(task_id, channel, value)``; only values that may change are decoded."""
        return [
            (
                row[0],
                row[1],
                loads(row[2]) if share is DECODE else list(share) if type(share) is _Listed else share,
            )
            for row, share in zip(self.rows, self.shares, strict=True)
        ]


def encode_writes(
    dumps: Callable[[object], bytes], writes: Sequence[tuple[str, object]], task_id: str, share: bool
) -> tuple[list[list[Any]], list[object]]:
    """A task's writes as rows ``[task_id, channel, value bytes]`` and their shares (all
    :data:`DECODE` unless ``share``); a special key written twice: its last write only.

    Raises:
        SerializationError: A value cannot be stored (the error names the key).
    """
    rows: list[list[Any]] = []
    shares: list[object] = []
    special = 0
    for channel, value in writes:
        try:
            rows.append([task_id, channel, dumps(value)])
        except SerializationError as exc:
            raise SerializationError(f"Cannot store write to {channel!r}: {exc}", key=channel) from exc
        shares.append(shareable(value) if share else DECODE)
        if channel in SPECIAL:
            special += 1
    if special > 1:  # maybe one written twice
        last = {w[1]: i for i, w in enumerate(rows) if w[1] in SPECIAL}
        keep = [i for i, w in enumerate(rows) if last.get(w[1], i) == i]
        rows, shares = [rows[i] for i in keep], [shares[i] for i in keep]
    return rows, shares


def kept_writes(
    old: list[list[object]],
    old_shares: list[object],
    task_id: str,
    new: list[list[object]],
    new_shares: list[object],
) -> tuple[list[list[object]], list[object]]:
    """The stored writes after ``task_id`` writes ``new``: its earlier ones replaced, except its
    special keys it does not write again."""
    written = {w[1] for w in new}
    keep = [i for i, w in enumerate(old) if w[0] != task_id or (w[1] in SPECIAL and w[1] not in written)]
    return [old[i] for i in keep] + new, [old_shares[i] for i in keep] + new_shares


def read_writes(
    recent: RecentWrites, th: ThreadLog, seq: int, loads: Callable[[bytes], Any]
) -> list[tuple[str, str, Any]]:
    """The pending writes of checkpoint ``seq`` of ``th``, as ``(task_id, channel, value)``."""
    if recent.th is th and recent.seq == seq:
        return recent.read(loads)
    data = th.writes(seq)
    return [(task, channel, loads(value)) for task, channel, value in loads(data)] if data else []
