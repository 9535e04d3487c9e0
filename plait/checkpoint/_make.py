"""Making checkpoints: time-ordered ids, timestamps, copies, and LangGraph's ``create_checkpoint``."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from plait.checkpoint._locks import stamp_of
from plait.checkpoint._types import ChannelVersions, Checkpoint
from plait.errors import EmptyChannelError

__all__ = ["ChannelVersions", "copy_checkpoint", "create_checkpoint", "new_checkpoint_id", "now_iso"]

_CONTAINERS = ("channel_values", "channel_versions", "barriers")
_LISTS = ("updated_channels", "next", "sends", "interrupts")


_second: tuple[int, str] = (-1, "")  # the last whole second formatted: (seconds since the epoch, its text)
stamp: tuple[str, int] = ("", 0)
"""The last time :func:`now_iso` wrote, and it as microseconds since the epoch (a saver packing
that text reads the number here instead of parsing it)."""


def now_iso() -> str:
    """The current UTC time in ISO-8601 form (as ``datetime.now(timezone.utc).isoformat()`` writes it)."""
    global _second, stamp  # noqa: PLW0603 - tuples, replaced atomically
    total = time.time_ns() // 1000
    seconds, micros = divmod(total, 1_000_000)
    known = _second
    if known[0] != seconds:
        known = _second = (seconds, datetime.fromtimestamp(seconds, timezone.utc).isoformat()[:19])
    text = f"{known[1]}.{micros:06d}+00:00" if micros else f"{known[1]}+00:00"
    stamp = (text, total)
    return text


_lock = threading.Lock()
_last = [0]
_node = int.from_bytes(os.urandom(8), "big")
_counter = itertools.count()
_made: tuple[str, int] = ("", 0)  # the last id made here and its stamp (the next run step's ``after``)
made_raw: tuple[str, bytes] = ("", b"")
"""The last id :func:`new_checkpoint_id` made and its 16 bytes (a saver storing ids as bytes reads them here)."""


def new_checkpoint_id(after: str | None = None) -> str:
    """A new UUID-shaped id whose string order is creation order.

    The first 60 bits hold the time in 100 ns units (kept strictly increasing),
    the rest is random per process plus a counter, so ids from different
    processes do not collide.

    Args:
        after: An id the new one must sort after (the thread head). A process
            whose clock is behind the one that wrote ``after`` still produces
            a greater id, so the thread's order never depends on clock skew.
    """
    global _made, made_raw  # noqa: PLW0603 - tuples, replaced atomically
    made = _made
    floor = (made[1] if after == made[0] else stamp_of(after)) if after else 0
    if floor >= (1 << 60) - 1:  # no greater stamp exists: such an id was not made by a clock
        floor = 0
    with _lock:
        now = _last[0] = max(time.time_ns() // 100, _last[0] + 1)
    # the floor lifts this id only: one thread's head (another process's clock, or an id imported from
    # elsewhere) must not move every later id of this process into the future
    stamp = max(now, floor + 1)
    low = (_node + next(_counter)) & ((1 << 62) - 1)
    value = (stamp << 68) | (0x7 << 64) | (0b10 << 62) | low
    text = f"{value:032x}"
    cid = f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    _made = (cid, stamp)
    made_raw = (cid, value.to_bytes(16, "big"))
    return cid


def copy_checkpoint(checkpoint: Checkpoint) -> Checkpoint:
    """A copy of ``checkpoint`` whose maps and lists are new (the values in them are shared)."""
    out: dict[str, Any] = dict(checkpoint)
    for key in _CONTAINERS:
        if isinstance(out.get(key), dict):
            out[key] = dict(out[key])
    for key in _LISTS:
        if isinstance(out.get(key), list):
            out[key] = list(out[key])
    return out  # type: ignore[return-value]


def create_checkpoint(
    checkpoint: Checkpoint, channels: Mapping[str, Any] | None, step: int, *, id: str | None = None
) -> Checkpoint:
    """A new checkpoint (new id and time) after ``checkpoint``, with ``channels``' values when given.

    Args:
        checkpoint: The checkpoint it follows: versions and schedule are kept.
        channels: Channel objects by name (their ``checkpoint()`` value is stored; an empty one is
            left out), or ``None`` to keep ``checkpoint``'s values.
        step: The step it is made at (LangGraph orders ids by it; plait's ids are time-ordered).
        id: Its id (default: a new one).
    """
    del step
    out = copy_checkpoint(checkpoint)
    if channels is not None:
        versions = checkpoint.get("channel_versions") or {}
        values: dict[str, Any] = {}
        for name, channel in channels.items():
            if name not in versions:
                continue
            try:
                values[name] = channel.checkpoint()
            except EmptyChannelError:  # an empty channel has no value to store
                pass
        out["channel_values"] = values
    out["id"] = id or new_checkpoint_id()
    out["ts"] = now_iso()
    return out
