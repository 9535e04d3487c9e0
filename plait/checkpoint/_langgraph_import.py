"""Importing LangGraph's threads (SQLite or PostgreSQL) into a plait saver: ``plait migrate --from-langgraph``.

Each LangGraph checkpoint becomes a plait checkpoint with the same id, parent,
timestamp and metadata: the state keys' values (LangGraph's routing channels
``branch:to:*`` and ``__start__`` become plait's ``next``; ``join:*`` barriers its
``barriers``; queued ``Send`` packets its ``sends``), versions as plait's integer
counters, and every stored task write, with task ids, interrupt ids and subgraph
namespaces renamed to plait's scheme so that a paused thread resumes in plait.
Values are decoded by :class:`~plait.checkpoint._langgraph_decode.LangGraphDecoder`
(no pickle; classes only through plait's allow-list). Every imported checkpoint is
read back and compared before the next one is written.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ormsgpack

from plait._internal._narrow import is_sequence, is_str_dict
from plait.checkpoint._langgraph_decode import EMPTY, LangGraphDecoder
from plait.checkpoint._langgraph_source import Row, Source, SqliteSource
from plait.checkpoint._task_ids import task_key
from plait.checkpoint.base import BaseCheckpointSaver
from plait.checkpoint.serde import Serializer
from plait.checkpoint.serde._bound import check
from plait.errors import SerializationError
from plait.types import Interrupt, Send

__all__ = [
    "COMPLETE",
    "FAILED",
    "IMPORTED",
    "Imported",
    "Outcome",
    "import_threads",
    "langgraph_tables",
    "sqlite_source",
]

_SPECIAL = ("__interrupt__", "__resume__", "__error__")
_DIFFERENT = (
    "the destination's thread of this id has {have} checkpoint(s) of its own (it went on there) and lacks "
    "some of LangGraph's; to import LangGraph's again, delete it in the destination first"
)


IMPORTED, COMPLETE, KEPT, FAILED = "imported", "complete", "kept", "failed"


@dataclass
class Outcome:
    """What happened to one thread."""

    thread_id: str
    status: str
    """:data:`IMPORTED`, :data:`COMPLETE` (the destination had every checkpoint), :data:`KEPT` (the
    destination's thread of that id went on on its own: left alone) or :data:`FAILED`."""
    checkpoints: int = 0
    """Checkpoints imported (or found already there)."""
    detail: str = ""
    """Why it failed, or a note (an earlier partial import finished)."""


@dataclass
class Imported:
    """What an import did."""

    threads: list[str] = field(default_factory=list[str])
    """Threads imported."""
    skipped: list[str] = field(default_factory=list[str])
    """Threads left alone: the destination has every checkpoint of them, or a thread of its own of that id."""
    failed: list[str] = field(default_factory=list[str])
    """Threads that could not be imported (nothing of them is left in the destination)."""
    outcomes: list[Outcome] = field(default_factory=list[Outcome])
    """One per thread, in order."""
    checkpoints: int = 0
    """Checkpoints imported (and verified)."""
    writes: int = 0
    """Task writes imported."""

    def add(self, outcome: Outcome) -> None:
        """Record one thread's outcome."""
        self.outcomes.append(outcome)
        lists = {IMPORTED: self.threads, COMPLETE: self.skipped, KEPT: self.skipped, FAILED: self.failed}
        lists[outcome.status].append(outcome.thread_id)


def langgraph_tables(names: set[str]) -> bool:
    """Whether a SQLite database's table names include LangGraph's checkpoint tables."""
    return {"checkpoints", "writes"} <= names


def sqlite_source(path: str) -> Source:
    """LangGraph's tables in a SQLite file, opened read-only."""
    return SqliteSource(sqlite3.connect(f"file:{path}?mode=ro", uri=True))


def _where(row: Row, key: str | None = None) -> str:
    at = f"thread {row.thread_id!r}, namespace {row.ns!r}, checkpoint {row.checkpoint_id}"
    return f"{at}, key {key!r}" if key is not None else at


def _version(value: Any) -> int:
    text = str(value)
    return int(text.split(".", 1)[0]) if text else 0


class _Thread:
    """Translation state of one thread: LangGraph task ids to plait's."""

    def __init__(self) -> None:
        self.tasks: dict[str, str] = {}

    def namespace(self, ns: str) -> str:
        """``node:<langgraph task id>`` segments renamed to plait's ``node:<task id>``."""
        if not ns:
            return ns
        parts: list[str] = []
        for segment in ns.split("|"):
            node, _, task = segment.partition(":")
            parts.append(f"{node}:{self.tasks[task]}" if task in self.tasks else segment)
        return "|".join(parts)


def _next(checkpoint: dict[str, Any]) -> tuple[list[str], dict[str, list[str]]]:
    """Nodes to run next and partial join barriers, from LangGraph's trigger channels."""
    versions: dict[str, Any] = checkpoint.get("channel_versions") or {}
    seen: dict[str, dict[str, Any]] = checkpoint.get("versions_seen") or {}
    values: dict[str, Any] = checkpoint.get("channel_values") or {}
    nxt: set[str] = set()
    barriers: dict[str, list[str]] = {}
    for channel, version in versions.items():
        if channel == "__start__":
            node = "__start__"
        elif channel.startswith("branch:to:"):
            node = channel[len("branch:to:") :]
        elif channel.startswith("join:"):
            sources, _, node = channel[len("join:") :].rpartition(":")
            got = sorted(map(str, list(values.get(channel) or ())))
            if got and set(got) != set(sources.split("+")):
                barriers[channel] = got
                continue
        else:
            continue
        # a trigger counts while it holds a value the node has not seen (consuming it clears the value)
        if channel in values and str(version) > str(seen.get(node, {}).get(channel, "")):
            nxt.add(node)
    return sorted(nxt), barriers


def _internal(key: str) -> bool:
    return key.startswith(("branch:", "join:", "__pregel_", "__start__"))


def translate(
    row: Row, lg: dict[str, Any], values: dict[str, Any], meta: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A LangGraph checkpoint as plait's ``(checkpoint, metadata)``."""
    nxt, barriers = _next({**lg, "channel_values": values})
    sends = [(s.node, s.arg) for s in values.get("__pregel_tasks") or () if isinstance(s, Send)]
    kept = {k: v for k, v in values.items() if not _internal(k)}
    stored: dict[str, Any] = lg.get("channel_versions") or {}
    versions = {k: _version(v) for k, v in stored.items() if not _internal(k)}
    checkpoint: dict[str, Any] = {
        "v": 1,
        "id": row.checkpoint_id,
        "ts": lg.get("ts") or "",
        "channel_values": kept,
        "channel_versions": versions,
        "updated_channels": sorted(str(k) for k in lg.get("updated_channels") or () if k in versions),
        "next": nxt,
        "sends": sends,
        "barriers": barriers,
        "interrupts": [],
    }
    metadata: dict[str, Any] = {"parents": {}, **meta}
    return checkpoint, metadata


def _task_id(row: Row, path: str, checkpoint: dict[str, Any], task: str) -> str:
    """plait's id of the task that made a write (:func:`task_key`; a node's tasks are numbered
    pulls first, then its sends, as ``plait.pregel._step.send_indices`` does)."""
    sends: list[tuple[str, Any]] = checkpoint["sends"]
    parts = [p.strip() for p in path.split(",")]
    if len(parts) == 2 and parts[0] == "~__pregel_pull":
        return task_key(row.checkpoint_id, parts[1], 0)
    if len(parts) >= 2 and parts[0] == "~__pregel_push" and parts[1].isdigit() and int(parts[1]) < len(sends):
        i = int(parts[1])
        node = sends[i][0]
        index = (node in checkpoint["next"]) + sum(1 for s in sends[:i] if s[0] == node)
        return task_key(row.checkpoint_id, node, index)
    return task


def _writes(
    row: Row,
    checkpoint: dict[str, Any],
    thread: _Thread,
    decode: Callable[[Row, str, str, bytes | None], Any],
) -> dict[str, list[tuple[str, Any]]]:
    """Task writes by plait task id (LangGraph's routing writes are plait's ``next``, not writes)."""
    out: dict[str, list[tuple[str, Any]]] = {}
    for task, path, channel, kind, data in row.writes:
        tid = _task_id(row, path, checkpoint, task)
        thread.tasks[task] = tid
        if _internal(channel):
            continue
        value = decode(row, channel, kind, data)
        if channel == "__interrupt__":
            items: list[Any] = list(value) if is_sequence(value) else [value]
            if not all(isinstance(i, Interrupt) for i in items):
                raise SerializationError(
                    f"Cannot import {_where(row, channel)}: the interrupt write is not a list of Interrupt "
                    "(the row is damaged or was planted)",
                    key=channel,
                )
            # LangGraph's ids are kept: plait derives them as LangGraph does, and clients hold them
            value = [Interrupt(value=i.value, id=i.id) for i in items]
        out.setdefault(tid, []).append((channel, value))
    return out


@dataclass
class _Importer:
    source: Source
    saver: BaseCheckpointSaver
    decoder: LangGraphDecoder
    result: Imported = field(default_factory=Imported)

    def decode(self, row: Row, key: str, kind: str, data: bytes | None) -> Any:
        try:
            return self.decoder.loads_typed(kind, data)
        except SerializationError as exc:
            raise SerializationError(f"Cannot import {_where(row, key)}: {exc}", key=key) from None

    def record(self, row: Row) -> dict[str, Any]:
        """The checkpoint record with its inline values decoded one key at a time (errors name the key)."""
        if isinstance(row.checkpoint, dict):
            return row.checkpoint
        kind, data = row.checkpoint
        if kind != "msgpack":
            found = self.decode(row, "(checkpoint record)", kind, data)
            if not is_str_dict(found):
                raise SerializationError(f"Cannot import {_where(row)}: the checkpoint record is not a map")
            return found
        try:  # the structure first, extension records kept as they are
            check(data, len(data))
            raw = ormsgpack.unpackb(data, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
        except Exception as exc:  # noqa: BLE001 - corrupt row
            raise SerializationError(
                f"Cannot import {_where(row)}: corrupt checkpoint record ({exc})"
            ) from None
        if not is_str_dict(raw):
            raise SerializationError(f"Cannot import {_where(row)}: the checkpoint record is not a map")
        record = raw
        values: Any = record.get("channel_values") or {}
        record["channel_values"] = {
            k: self.decode(row, k, "msgpack", ormsgpack.packb(v)) for k, v in values.items()
        }
        return {
            k: v if k == "channel_values" else self.decode(row, k, "msgpack", ormsgpack.packb(v))
            for k, v in record.items()
        }

    def metadata(self, row: Row) -> dict[str, Any]:
        meta: Any = row.metadata
        if type(meta) is bytes or type(meta) is memoryview:
            data = bytes(meta)
            meta = (
                self.decoder.loads_json(data)
                if data[:1] == b"{"
                else self.decode(row, "(metadata)", "msgpack", data)
            )
        if not is_str_dict(meta):
            raise SerializationError(f"Cannot import {_where(row)}: its metadata is not a map")
        return meta

    def values(self, row: Row, record: dict[str, Any]) -> dict[str, Any]:
        values = dict(record.get("channel_values") or {})
        for key, (kind, data) in row.blobs.items():
            value = self.decode(row, key, kind, data)
            if value is not EMPTY:
                values[key] = value
        return values

    def thread(self, thread_id: str, present: bool) -> Outcome:
        """Import one thread whole, or leave nothing of it in the destination."""
        rows = list(self.source.rows(thread_id))
        note = ""
        if present:
            wanted = {r.checkpoint_id for r in rows}
            try:
                have = {
                    str(t.config["configurable"]["checkpoint_id"])
                    for t in self.saver.list({"configurable": {"thread_id": thread_id}})
                }
            except SerializationError as exc:
                return Outcome(
                    thread_id, FAILED, detail=f"the destination's copy of it cannot be read ({exc})"
                )
            last = next((r for r in reversed(rows) if not r.ns), None)  # the root's last, stored last
            if wanted <= have and self._writes_stored(last):
                return Outcome(thread_id, COMPLETE, len(wanted))
            if not have <= wanted:
                return Outcome(thread_id, KEPT, len(have), _DIFFERENT.format(have=len(have - wanted)))
            if wanted <= have and last is not None:  # (its writes were cut off)
                have.discard(last.checkpoint_id)
            note = (
                f"finished an earlier import that had stopped at {len(have)} of {len(wanted)} checkpoint(s)"
            )
            self.saver.delete_thread(thread_id)
        counts = self.result.checkpoints, self.result.writes
        thread = _Thread()
        try:
            for row in rows:
                self.one(row, thread)
        except SerializationError as exc:
            self.result.checkpoints, self.result.writes = counts
            self.saver.delete_thread(thread_id)  # nothing of a failed thread stays
            return Outcome(thread_id, FAILED, detail=str(exc))
        except BaseException:
            with contextlib.suppress(Exception):  # the destination failed: a rerun finds the partial thread
                self.saver.delete_thread(thread_id)
            raise
        return Outcome(thread_id, IMPORTED, self.result.checkpoints - counts[0], note)

    def _writes_stored(self, row: Row | None) -> bool:
        """Whether the destination holds the writes of ``row``, the last one an import stores (an
        import stopped between that checkpoint and its writes left it without them)."""
        if row is None:
            return True
        wanted = sum(1 for w in row.writes if not _internal(w[2]))
        config = {
            "configurable": {
                "thread_id": row.thread_id,
                "checkpoint_ns": row.ns,
                "checkpoint_id": row.checkpoint_id,
            }
        }
        try:
            got = self.saver.get_tuple(config)
        except SerializationError:
            return False
        return got is not None and len(got.pending_writes or ()) >= wanted

    def one(self, row: Row, thread: _Thread) -> None:
        record = self.record(row)
        try:
            checkpoint, metadata = translate(row, record, self.values(row, record), self.metadata(row))
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            raise SerializationError(
                f"Cannot import {_where(row)}: a malformed checkpoint record ({exc!r})"
            ) from None
        ns = thread.namespace(row.ns)
        parent_config = {"configurable": {"thread_id": row.thread_id, "checkpoint_ns": ns}}
        if row.parent_id:
            parent_config["configurable"]["checkpoint_id"] = row.parent_id
        config = self.saver.put(parent_config, checkpoint, metadata, checkpoint["channel_versions"])  # type: ignore[arg-type]  # a complete checkpoint and metadata
        writes = _writes(row, checkpoint, thread, self.decode)
        for tid, items in writes.items():
            self.saver.put_writes(config, items, tid)
        self.verify(row, config, checkpoint, writes)
        self.result.checkpoints += 1
        self.result.writes += sum(len(items) for items in writes.values())

    def verify(
        self, row: Row, config: dict[str, Any], checkpoint: dict[str, Any], writes: dict[str, list[Any]]
    ) -> None:
        back = self.saver.get_tuple(config)
        if back is None:
            raise SerializationError(f"Imported {_where(row)} but cannot read it back")
        got = back.checkpoint.get("channel_values") or {}
        for key, value in checkpoint["channel_values"].items():
            if key not in got or got[key] != value:
                raise SerializationError(
                    f"Imported {_where(row, key)} but it reads back differently", key=key
                )
        expected = sorted(((t, c, v) for t, items in writes.items() for c, v in items), key=_task_channel)
        read = sorted(back.pending_writes or (), key=_task_channel)
        if len(read) != len(expected) or not all(map(_same_write, read, expected)):
            raise SerializationError(
                f"Imported the task writes of {_where(row)} but they read back differently"
            )
        if back.checkpoint.get("next") != checkpoint["next"]:
            raise SerializationError(f"Imported {_where(row)} but its next nodes read back differently")


def _task_channel(write: tuple[str, str, Any]) -> tuple[str, str]:
    return write[0], write[1]


def _same_write(a: tuple[str, str, object], b: tuple[str, str, object]) -> bool:
    """Equal values, or equal reprs for values without ``==`` (a set's repr may order its items otherwise)."""
    return a[:2] == b[:2] and (bool(a[2] == b[2]) or repr(a[2]) == repr(b[2]))


def import_threads(
    source: Source,
    saver: BaseCheckpointSaver,
    *,
    threads: list[str] | None = None,
    progress: Callable[[Outcome], None] | None = None,
) -> Imported:
    """Import LangGraph's threads from ``source`` into ``saver``, verifying every checkpoint.

    Each thread is imported whole or not at all: a thread that fails (a value that cannot be
    decoded, a checkpoint that reads back differently) is deleted from ``saver`` again and the
    next thread is imported. A thread the destination has every checkpoint of is left alone; one
    it has only some of (an import that was stopped) is imported again from the start.

    Args:
        source: LangGraph's tables.
        saver: A plait saver (its serializer's allow-list decides which classes are rebuilt).
        threads: Only these thread ids (default: every one).
        progress: Called with each thread's :class:`Outcome`.

    Raises:
        Exception: what the destination raised when it could not be written (database errors).
    """
    importer = _Importer(source, saver, LangGraphDecoder(getattr(saver, "serde", None) or Serializer()))
    present = {t.thread_id for t in saver.threads()}
    for thread_id in threads if threads is not None else source.thread_ids():
        outcome = importer.thread(thread_id, thread_id in present)
        importer.result.add(outcome)
        if progress is not None:
            progress(outcome)
    return importer.result
