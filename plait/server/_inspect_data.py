"""A bare checkpoint database as JSON: threads, timelines, states and diffs read straight from a saver.

Used by ``plait inspect DB --web``. Everything here only reads: ``saver.threads()``,
``saver.list()`` and ``saver.get_tuple()``. Values are turned into plain JSON data first
(messages as their dicts), so comparing and measuring them needs no knowledge of the graph.
"""

from __future__ import annotations

from typing import Any, cast

from plait.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from plait.server._wire import ApiError, as_dict, as_list, as_str, dumps, loads

__all__ = ["changes", "diff", "state", "thread", "threads", "timeline"]

_INTERRUPT = "__interrupt__"
_ERROR = "__error__"


def _config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, object]:
    conf: dict[str, object] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data (messages and models as dicts, anything else as its repr)."""
    return loads(dumps(value))


def _id(item: CheckpointTuple | None) -> str | None:
    if item is None:
        return None
    found: str | None = item.config.get("configurable", {}).get("checkpoint_id")
    return found


def _parent_id(item: CheckpointTuple) -> str | None:
    found: str | None = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    return found


def _values(item: CheckpointTuple | None) -> dict[str, object]:
    if item is None:
        return {}
    return as_dict(_plain(item.checkpoint.get("channel_values") or {}))


def _pending(item: CheckpointTuple, channel: str) -> list[object]:
    return [value for _, chan, value in item.pending_writes or () if chan == channel]


def _interrupts(item: CheckpointTuple) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for batch in _pending(item, _INTERRUPT):
        group: list[object] = (
            list(cast("list[object]", batch)) if isinstance(batch, (list, tuple)) else [batch]
        )
        for one in group:
            found.append({"value": _plain(getattr(one, "value", one)), "id": getattr(one, "id", None)})
    return found


def threads(
    saver: BaseCheckpointSaver, query: str = "", limit: int = 50, offset: int = 0
) -> dict[str, object]:
    """Threads whose id contains ``query`` (case-insensitive), most recently updated first."""
    needle = query.strip().lower()
    found = sorted(
        (info for info in saver.threads() if needle in info.thread_id.lower()),
        key=lambda info: info.updated_at,
        reverse=True,
    )
    page = [
        {
            "thread_id": info.thread_id,
            "checkpoints": info.checkpoints,
            "step": info.step,
            "head_id": info.head_id,
            "updated_at": info.updated_at,
        }
        for info in found[offset : offset + limit]
    ]
    return {"total": len(found), "threads": page}


def _head(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None) -> CheckpointTuple:
    item = saver.get_tuple(_config(thread_id, checkpoint_id))
    if item is None:
        if checkpoint_id:
            raise ApiError(404, f"Thread {thread_id!r} has no checkpoint {checkpoint_id!r}")
        raise ApiError(404, f"Thread {thread_id!r} not found (it has no checkpoints)")
    return item


def thread(saver: BaseCheckpointSaver, thread_id: str) -> dict[str, object]:
    """A thread's head: its status (``interrupted`` when it waits, else ``idle``), next nodes, interrupts."""
    head = _head(saver, thread_id)
    interrupts = _interrupts(head)
    errors = _pending(head, _ERROR)
    nxt = list(head.checkpoint.get("next") or ())
    status = "error" if errors and not interrupts else "interrupted" if nxt else "idle"
    return {
        "thread_id": thread_id,
        "status": status,
        "head_id": _id(head),
        "step": head.metadata.get("step"),
        "next": nxt,
        "interrupts": interrupts,
        "errors": [_plain(e) for e in errors],
        "updated_at": head.checkpoint.get("ts"),
    }


def state(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None) -> dict[str, object]:
    """The state at a checkpoint (default: the head), with its metadata and the writes pending on it."""
    item = _head(saver, thread_id, checkpoint_id)
    return {
        "checkpoint_id": _id(item),
        "parent_checkpoint_id": _parent_id(item),
        "created_at": item.checkpoint.get("ts"),
        "metadata": _plain(item.metadata),
        "next": list(item.checkpoint.get("next") or ()),
        "values": _values(item),
        "interrupts": _interrupts(item),
        "pending_writes": [
            {"task_id": task, "channel": channel, "value": _plain(value)}
            for task, channel, value in item.pending_writes or ()
            if channel != _INTERRUPT
        ],
    }


def _ids(items: list[object]) -> list[object] | None:
    """The ``id`` of every item when each is an object with one (a message list), else ``None``."""
    ids = [as_dict(m).get("id") for m in items]
    return ids if items and all(isinstance(i, str) for i in ids) else None


def changes(old: dict[str, object], new: dict[str, object]) -> list[dict[str, object]]:
    """What differs between two plain states, key by key, sorted by key.

    Each change is ``{"key", "kind", ...}`` with ``kind`` one of ``added`` (``after``),
    ``removed`` (``before``), ``appended`` (``items``: a list grew at its end), ``messages``
    (``added`` / ``removed`` / ``changed``: lists of objects with ids, compared by id) or
    ``changed`` (``before``, ``after``).
    """
    out: list[dict[str, object]] = []
    for key in sorted(set(old) | set(new)):
        if key not in new:
            out.append({"key": key, "kind": "removed", "before": old[key]})
        elif key not in old:
            out.append({"key": key, "kind": "added", "after": new[key]})
        elif old[key] != new[key]:
            out.append(_change(key, old[key], new[key]))
    return out


def _change(key: str, before: Any, after: Any) -> dict[str, object]:
    if isinstance(before, list) and isinstance(after, list):
        old, new = as_list(before), as_list(after)
        if new[: len(old)] == old:
            return {"key": key, "kind": "appended", "items": new[len(old) :]}
        old_ids, new_ids = _ids(old), _ids(new)
        if old_ids is not None and new_ids is not None:
            prior = dict(zip(old_ids, old, strict=True))
            return {
                "key": key,
                "kind": "messages",
                "added": [m for i, m in zip(new_ids, new, strict=True) if i not in prior],
                "removed": [m for i, m in zip(old_ids, old, strict=True) if i not in set(new_ids)],
                "changed": [m for i, m in zip(new_ids, new, strict=True) if i in prior and prior[i] != m],
            }
    return {"key": key, "kind": "changed", "before": before, "after": after}


def _writes(old: dict[str, object], new: dict[str, object]) -> tuple[dict[str, object], dict[str, int]]:
    """A step's writes for the timeline: the changed keys, with only the new items of a grown list,
    and how many messages it removed, per key."""
    out: dict[str, object] = {}
    removed: dict[str, int] = {}
    for change in changes(old, new):
        kind, key = change["kind"], as_str(change["key"])
        if kind == "appended":
            out[key] = change["items"]
        elif kind == "messages":
            out[key] = as_list(change["added"]) + as_list(change["changed"])
            if gone := as_list(change["removed"]):
                removed[key] = len(gone)
        elif kind != "removed":
            out[key] = change["after"]
    return out, removed


def _input(item: CheckpointTuple) -> dict[str, object]:
    """What an input checkpoint received: its pending writes (the input, not yet applied)."""
    return {
        str(channel): _plain(value)
        for _, channel, value in item.pending_writes or ()
        if channel not in (_INTERRUPT, _ERROR)
    }


def _nodes(item: CheckpointTuple, parent: CheckpointTuple | None) -> list[str]:
    source = item.metadata.get("source")
    if source == "loop" and parent is not None:
        return [str(n) for n in parent.checkpoint.get("next") or ()]
    if source == "update":
        return ["update_state"]
    return [str(source or "input")]


def timeline(saver: BaseCheckpointSaver, thread_id: str, limit: int = 100) -> list[dict[str, object]]:
    """A thread's checkpoints, newest first: step, source, node(s), writes, interrupts, bytes per channel.

    ``fork`` marks a checkpoint whose parent is not the checkpoint listed below it.
    """
    items = list(saver.list(_config(thread_id), limit=limit))
    if not items:
        raise ApiError(404, f"Thread {thread_id!r} not found (it has no checkpoints)")
    by_id = {_id(item): item for item in items}
    plain: dict[str | None, dict[str, object]] = {}

    def values_of(item: CheckpointTuple | None) -> dict[str, object]:
        key = _id(item)
        if key not in plain:
            plain[key] = _values(item)
        return plain[key]

    rows: list[dict[str, object]] = []
    for i, item in enumerate(items):
        parent_id = _parent_id(item)
        parent = by_id.get(parent_id) if parent_id else None
        if parent is None and parent_id:
            parent = saver.get_tuple(_config(thread_id, parent_id))
        below = _id(items[i + 1]) if i + 1 < len(items) else parent_id
        values = values_of(item)
        writes, removed = _writes(values_of(parent), values)
        source = item.metadata.get("source")
        rows.append(
            {
                "checkpoint_id": _id(item),
                "parent_checkpoint_id": parent_id,
                "fork": parent_id is not None and parent_id != below,
                "step": item.metadata.get("step"),
                "source": source,
                "run_id": item.metadata.get("run_id"),
                "created_at": item.checkpoint.get("ts"),
                "next": list(item.checkpoint.get("next") or ()),
                "nodes": _nodes(item, parent),
                "writes": _input(item) if source == "input" else writes,
                "removed": {} if source == "input" else removed,
                "interrupts": _interrupts(item),
                "bytes": {key: len(dumps(value)) for key, value in values.items()},
            }
        )
    return rows


def diff(saver: BaseCheckpointSaver, thread_id: str, first: str, second: str) -> dict[str, object]:
    """The changes from the older of two checkpoints of a thread to the newer one."""
    a, b = _head(saver, thread_id, first), _head(saver, thread_id, second)
    older, newer = (a, b) if str(a.checkpoint.get("ts", "")) <= str(b.checkpoint.get("ts", "")) else (b, a)
    return {
        "from": _id(older),
        "to": _id(newer),
        "from_step": older.metadata.get("step"),
        "to_step": newer.metadata.get("step"),
        "changes": changes(_values(older), _values(newer)),
    }
