"""InMemorySaver's compact checkpoint records: fields, metadata and timestamps packed small.

A record stores the checkpoint fields positionally and leaves defaults out, metadata of the
runtime's shape as ``[source, step, rest]``, and a UTC timestamp as microseconds since the epoch
when that reads back as the very same text (see :mod:`plait.checkpoint.memory`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from plait.checkpoint import _make
from plait.checkpoint._delta import EMPTY_FIELDS

__all__ = ["pack_fields", "pack_meta", "pack_ts", "unpack_fields", "unpack_meta", "unpack_ts"]

_FIELDS = ("channel_versions", "updated_channels", "next", "sends", "barriers", "interrupts")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


_PLAIN = frozenset({*EMPTY_FIELDS, "channel_values", "id", "ts"})
"""The keys of a checkpoint :func:`pack_fields` stores positionally (or leaves out)."""
_DEFAULTS = tuple(EMPTY_FIELDS[k] for k in _FIELDS)
_EMPTY_TAIL = list(_DEFAULTS[3:])


def pack_fields(checkpoint: Mapping[str, object]) -> list[object]:
    """The checkpoint fields other than id, ts and values: positional, defaults left out."""
    if checkpoint.keys() <= _PLAIN and checkpoint.get("v", 1) == 1:  # the runtime's checkpoints
        out = list(map(checkpoint.get, _FIELDS, _DEFAULTS))
        if out[3:] == _EMPTY_TAIL:  # no sends, barriers nor interrupts (most checkpoints)
            del out[3:]
        n = len(out)
        while n and out[n - 1] == _DEFAULTS[n - 1]:
            n -= 1
        del out[n:]
        return out
    get = checkpoint.get
    extra = {
        k: v
        for k, v in checkpoint.items()
        if k not in EMPTY_FIELDS and k not in ("channel_values", "id", "ts") or (k == "v" and v != 1)
    }
    return [*(get(k, EMPTY_FIELDS[k]) for k in _FIELDS), extra]


def unpack_fields(packed: list[Any]) -> dict[str, Any]:
    """The fields :func:`pack_fields` packed; a field left out is a new empty map or list."""
    n = len(packed)
    if n == 3:  # the most common: versions, updated channels, next
        return {
            "v": 1,
            "channel_versions": packed[0],
            "updated_channels": packed[1],
            "next": packed[2],
            "sends": [],
            "barriers": {},
            "interrupts": [],
        }
    fields = {k: v.copy() if type(v) is not int else v for k, v in EMPTY_FIELDS.items()}
    fields.update(zip(_FIELDS, packed[: len(_FIELDS)], strict=False))
    if n > len(_FIELDS):
        fields.update(packed[-1])
    return fields


def pack_meta(meta: Mapping[str, object]) -> object:
    """Metadata as ``[source, step, rest]`` when it has the runtime's shape, else as a map."""
    if len(meta) == 3 and meta.get("parents") == {} and "source" in meta and "step" in meta:
        return [meta["source"], meta["step"]]  # the runtime's own: nothing else to keep
    if "source" in meta and "step" in meta and meta.get("parents") == {}:
        rest = {k: v for k, v in meta.items() if k not in ("source", "step", "parents")}
        return [meta["source"], meta["step"], rest] if rest else [meta["source"], meta["step"]]
    return dict(meta)


def unpack_meta(packed: Any) -> dict[str, Any]:
    if type(packed) is dict:
        return cast("dict[str, Any]", packed)  # metadata maps are str-keyed
    return {**(packed[2] if len(packed) > 2 else {}), "source": packed[0], "step": packed[1], "parents": {}}


def pack_ts(ts: str) -> object:
    """A UTC ISO timestamp as microseconds since the epoch, when that gives back the same text."""
    made = _make.stamp
    if ts == made[0]:  # the time now_iso() wrote last (a checkpoint's, most often)
        return made[1]
    known = _second_read
    if (  # the runtime's form (``now_iso``) in the second last read or written: no parsing
        len(ts) == 32
        and ts[:19] == known[1]
        and ts[19] == "."
        and ts[26:] == "+00:00"
        and known[0] is not None
    ):
        fraction = ts[20:26]
        if fraction.isdigit() and fraction.isascii() and fraction != "000000":
            return known[0] * 1_000_000 + int(fraction)
    if (  # the runtime's form (``now_iso``): it reads back the same, no need to format it again
        len(ts) == 32
        and ts[26:] == "+00:00"
        and ts[4] == ts[7] == "-"
        and ts[10] == "T"
        and ts[13] == ts[16] == ":"
        and ts[19] == "."
        and ts[20:26] != "000000"  # (no fraction is written then)
        and ts.isascii()
    ):
        try:
            micros = (datetime.fromisoformat(ts) - _EPOCH) // _MICROSECOND
        except ValueError:
            return ts
        _remember(micros // 1_000_000)
        return micros
    try:
        when = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        return ts
    if when.tzinfo is None:
        return ts
    micros = (when - _EPOCH) // _MICROSECOND
    return micros if unpack_ts(micros) == ts else ts


_second_read: tuple[int | None, str] = (None, "")  # the last whole second packed or unpacked, and its text


def _remember(seconds: int) -> tuple[int | None, str]:
    """Make ``seconds`` the second :func:`pack_ts` and :func:`unpack_ts` know (its text formatted once)."""
    global _second_read  # noqa: PLW0603 - one tuple, replaced atomically
    known = _second_read = (seconds, (_EPOCH + timedelta(seconds=seconds)).isoformat()[:19])
    return known


def unpack_ts(packed: Any) -> str:
    """The text of a packed timestamp (as ``datetime.isoformat`` writes the UTC time; each second's
    part is formatted once, a thread's checkpoints mostly share it)."""
    if type(packed) is str:
        return packed
    seconds, micros = divmod(packed, 1_000_000)
    known = _second_read
    if known[0] != seconds:
        known = _remember(seconds)
    return f"{known[1]}.{micros:06d}+00:00" if micros else f"{known[1]}+00:00"
