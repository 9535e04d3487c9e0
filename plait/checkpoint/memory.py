"""``InMemorySaver``: threads kept in this process's memory (tests, demos, short-lived apps)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from plait.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    conflict,
)

__all__ = ["InMemorySaver", "MemorySaver"]

_Key = tuple[str, str]


class InMemorySaver(BaseCheckpointSaver):
    """Keeps every checkpoint of every thread in a dict; nothing survives the process.

    Each checkpoint stores only the values of the keys its step changed; the
    others are shared with the parent checkpoint, so a turn costs memory for
    what it added, not for the whole conversation.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        # (thread, ns) -> checkpoint id -> (checkpoint without values, metadata, parent id)
        self._threads: dict[_Key, dict[str, tuple[dict[str, Any], dict[str, Any], str | None]]] = {}
        # (thread, ns) -> (key, version) -> value
        self._blobs: dict[_Key, dict[tuple[str, int], Any]] = {}
        # (thread, ns, checkpoint id) -> [(task id, key, value)]
        self._writes: dict[tuple[str, str, str], list[tuple[str, str, Any]]] = {}

    @staticmethod
    def _key(config: Mapping[str, Any]) -> tuple[_Key, str | None]:
        conf = config.get("configurable") or {}
        return (str(conf["thread_id"]), conf.get("checkpoint_ns", "") or ""), conf.get("checkpoint_id")

    def _tuple(self, key: _Key, cid: str) -> CheckpointTuple:
        stored, metadata, parent = self._threads[key][cid]
        blobs = self._blobs.get(key, {})
        values = {}
        for name, version in stored["channel_versions"].items():
            found = blobs.get((name, version), _ABSENT)
            if found is not _ABSENT:
                values[name] = found
        checkpoint: Checkpoint = {**stored, "channel_values": values}  # type: ignore[typeddict-item]
        thread, ns = key
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
        parent_config = None if parent is None else {
            "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": parent}}
        writes = list(self._writes.get((thread, ns, cid), ()))
        return CheckpointTuple(config, checkpoint, dict(metadata), parent_config, writes)  # type: ignore[arg-type]

    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The addressed checkpoint, or the thread's newest."""
        key, cid = self._key(config)
        with self._lock:
            checkpoints = self._threads.get(key)
            if not checkpoints:
                return None
            if cid is None:
                cid = max(checkpoints)
            elif cid not in checkpoints:
                return None
            return self._tuple(key, cid)

    def list(self, config: dict[str, Any] | None, *, filter: dict[str, Any] | None = None,  # noqa: A002
             before: dict[str, Any] | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first."""
        with self._lock:
            if config is None:
                keys = list(self._threads)
            else:
                keys = [self._key(config)[0]]
            ids = [(cid, key) for key in keys for cid in self._threads.get(key, {})]
        ids.sort(reverse=True)
        bound = (before or {}).get("configurable", {}).get("checkpoint_id") if before else None
        count = 0
        for cid, key in ids:
            if bound is not None and cid >= bound:
                continue
            with self._lock:
                if cid not in self._threads.get(key, {}):
                    continue
                item = self._tuple(key, cid)
            if filter and any(item.metadata.get(k) != v for k, v in filter.items()):
                continue
            yield item
            count += 1
            if limit is not None and count >= limit:
                return

    supports_head_check = True

    def put(self, config: dict[str, Any], checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: Mapping[str, int], *, expected_head: Any = ...) -> dict[str, Any]:
        """Store a checkpoint; only the values of ``new_versions`` are recorded.

        Raises:
            CheckpointConflictError: ``expected_head`` is given and is not the thread's newest checkpoint.
        """
        key, parent = self._key(config)
        values = checkpoint.get("channel_values") or {}
        stored = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        with self._lock:
            if expected_head is not ...:
                existing = self._threads.get(key)
                head = max(existing) if existing else None
                if head != expected_head:
                    raise conflict(key[0], expected_head, head)
            blobs = self._blobs.setdefault(key, {})
            for name, version in new_versions.items():
                blobs[(name, version)] = values.get(name, _ABSENT)
            for name, version in (checkpoint.get("channel_versions") or {}).items():
                if (name, version) not in blobs and name in values:
                    blobs[(name, version)] = values[name]
            self._threads.setdefault(key, {})[checkpoint["id"]] = (stored, dict(metadata), parent)
        thread, ns = key
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        """Record writes of a task whose step has not completed."""
        (thread, ns), cid = self._key(config)
        with self._lock:
            bucket = self._writes.setdefault((thread, ns, str(cid)), [])
            bucket[:] = [w for w in bucket if w[0] != task_id or w[1] in ("__interrupt__", "__resume__")]
            bucket.extend((task_id, k, v) for k, v in writes)

    def delete_thread(self, thread_id: str) -> None:
        """Forget every checkpoint and write of the thread."""
        with self._lock:
            for key in [k for k in self._threads if k[0] == thread_id]:
                del self._threads[key]
                self._blobs.pop(key, None)
            for wkey in [k for k in self._writes if k[0] == thread_id]:
                del self._writes[wkey]


class _Absent:
    __slots__ = ()


_ABSENT: Any = _Absent()

MemorySaver = InMemorySaver
"""Alias kept for LangGraph compatibility."""
