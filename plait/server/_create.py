"""Creating a run: check the request, apply the thread's multitask strategy, queue it."""

from __future__ import annotations

from typing import Any, cast

from plait.server._assistants import assistant_id_for, get_assistant
from plait.server._db import Tx
from plait.server._execute import STREAM_MODES
from plait.server._http import opt
from plait.server._state import ServerState
from plait.server._threads import create_thread
from plait.server._wire import ApiError, as_dict, as_list, check_uuid, dumps, loads, now_iso, uuid7

__all__ = ["create_run", "run_json"]

_STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
_UNSUPPORTED = ("webhook", "after_seconds")


def _stream_modes(raw: Any) -> list[str]:
    modes: Any = ["values"] if raw is None else [raw] if isinstance(raw, str) else raw
    if not isinstance(modes, list) or not modes:
        raise ApiError(422, f"stream_mode must be a mode or a list of modes, got {raw!r}")
    for mode in as_list(modes):
        if mode == "events":
            raise ApiError(422, "stream_mode 'events' is not supported by plait serve (NotImplemented)")
        if mode not in STREAM_MODES:
            raise ApiError(422, f"unknown stream_mode {mode!r}; choose from {sorted(STREAM_MODES)}")
    return cast("list[str]", modes)


def _kwargs(data: dict[str, Any], temporary: bool) -> dict[str, Any]:
    for key in _UNSUPPORTED:
        if data.get(key):
            raise ApiError(422, f"{key} is not supported by plait serve (NotImplemented)")
    command = opt(data, "command", dict)
    if command is not None and not set(command) <= {"resume", "update", "goto"}:
        raise ApiError(422, f"command takes resume, update and goto, got {sorted(command)}")
    checkpoint = as_dict(opt(data, "checkpoint", dict))
    for key in ("interrupt_before", "interrupt_after"):
        value = data.get(key)
        if value is not None and value != "*" and not isinstance(value, list):
            raise ApiError(422, f"{key} must be '*' or a list of node names, got {value!r}")
    if data.get("input") is not None and not isinstance(data["input"], (dict, list)):
        raise ApiError(422, f"input must be a JSON object, got {data['input']!r}")
    return {
        "input": data.get("input"),
        "command": command,
        "config": as_dict(opt(data, "config", dict)),
        "context": as_dict(opt(data, "context", dict)),
        "stream_mode": _stream_modes(data.get("stream_mode")),
        "interrupt_before": data.get("interrupt_before"),
        "interrupt_after": data.get("interrupt_after"),
        "checkpoint_id": opt(data, "checkpoint_id", str) or checkpoint.get("checkpoint_id"),
        "temporary": temporary,
        "subgraphs": bool(data.get("stream_subgraphs")),
        "resumable": bool(data.get("stream_resumable")),
        "durability": opt(data, "durability", str),
    }


def run_json(row: dict[str, Any]) -> dict[str, Any]:
    """A run row as the API shows it."""
    doc: dict[str, Any] = loads(row["doc"])
    doc["status"], doc["updated_at"] = row["status"], row["updated_at"]
    return doc


async def _inflight(tx: Tx, thread_id: str) -> list[dict[str, Any]]:
    return await tx.fetch(
        "SELECT run_id, status FROM plait_server_runs WHERE thread_id = ? AND status IN ('pending', 'running')",
        (thread_id,),
    )


async def _thread_for_run(state: ServerState, tx: Tx, thread_id: str, data: dict[str, Any]) -> dict[str, Any]:
    lock = " FOR UPDATE" if state.db.dialect == "postgres" else ""
    rows = await tx.fetch("SELECT doc FROM plait_server_threads WHERE thread_id = ?" + lock, (thread_id,))
    if rows:
        return cast("dict[str, Any]", loads(rows[0]["doc"]))
    if_not_exists = opt(data, "if_not_exists", str) or "reject"
    if if_not_exists not in ("reject", "create"):
        raise ApiError(422, f"if_not_exists must be 'reject' or 'create', got {if_not_exists!r}")
    if if_not_exists == "reject":
        raise ApiError(404, f"Thread {thread_id} not found (pass if_not_exists='create' to create it)")
    return await create_thread(tx, thread_id, {})


async def _apply_strategy(state: ServerState, tx: Tx, thread_id: str, strategy: str) -> list[tuple[str, str]]:
    """Deal with the thread's pending/running runs; the running ones to cancel after commit."""
    inflight = await _inflight(tx, thread_id)
    if not inflight or strategy == "enqueue":
        return []
    if strategy == "reject":
        raise ApiError(
            409, f"Thread {thread_id} is busy with run {inflight[0]['run_id']} (multitask_strategy='reject')"
        )
    to_cancel: list[tuple[str, str]] = []
    for row in inflight:
        if row["status"] == "pending":
            if strategy == "rollback":
                await tx.run("DELETE FROM plait_server_runs WHERE run_id = ?", (row["run_id"],))
            else:
                await tx.run(
                    "UPDATE plait_server_runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?",
                    (now_iso(), row["run_id"]),
                )
        else:
            to_cancel.append((row["run_id"], strategy))
    return to_cancel


async def cancel_running(state: ServerState, run_id: str, action: str) -> None:
    """Cancel a running run wherever it executes."""
    if state.worker is not None and state.worker.cancel_local(run_id, action):
        return
    await state.db.notify("plait_server_cancel", f"{run_id}:{action}")


async def create_run(
    state: ServerState, thread_id: str | None, data: dict[str, Any], *, wait: bool = False
) -> dict[str, Any]:
    """Queue a run on ``thread_id`` (``None``: a stateless run); its API document.

    ``wait``: the client waits for the outcome only (``runs.wait``): the run publishes no other events.
    """
    raw_assistant = data.get("assistant_id")
    if not isinstance(raw_assistant, str):
        raise ApiError(
            422, f"assistant_id must be a string (an assistant id or a graph id), got {raw_assistant!r}"
        )
    assistant = await get_assistant(state.db, assistant_id_for(raw_assistant, state))
    if assistant is None:
        raise ApiError(404, f"Assistant {raw_assistant} not found")
    strategy = opt(data, "multitask_strategy", str) or "enqueue"
    if strategy not in _STRATEGIES:
        raise ApiError(422, f"multitask_strategy must be one of {list(_STRATEGIES)}, got {strategy!r}")
    temporary = thread_id is None and (opt(data, "on_completion", str) or "delete") == "delete"
    kwargs = _kwargs(data, temporary)
    if wait:
        kwargs["wait"] = True
    metadata = as_dict(opt(data, "metadata", dict))
    now, run_id = now_iso(), uuid7()
    doc: dict[str, Any] = {
        "run_id": run_id,
        "thread_id": thread_id or uuid7(),
        "assistant_id": assistant["assistant_id"],
        "metadata": {**assistant.get("metadata", {}), **metadata},
        "status": "pending",
        "kwargs": kwargs,
        "multitask_strategy": strategy,
        "created_at": now,
        "updated_at": now,
    }
    to_cancel: list[tuple[str, str]] = []
    async with state.db.tx(durable=True) as tx:
        if not temporary:
            if thread_id is not None:
                check_uuid(thread_id, "thread ID")
            thread = await _thread_for_run(state, tx, doc["thread_id"], data)
            to_cancel = await _apply_strategy(state, tx, doc["thread_id"], strategy)
            thread["metadata"] = {
                **thread["metadata"],
                "graph_id": assistant["graph_id"],
                "assistant_id": assistant["assistant_id"],
            }
            doc["metadata"] = {**thread["metadata"], **doc["metadata"]}
            await tx.run(
                "UPDATE plait_server_threads SET doc = ?, updated_at = ? WHERE thread_id = ?",
                (dumps({k: v for k, v in thread.items() if k != "values"}).decode(), now, doc["thread_id"]),
            )
        await tx.run(
            "INSERT INTO plait_server_runs (run_id, thread_id, assistant_id, status, created_at, updated_at, doc) "
            "VALUES (?, ?, ?, 'pending', ?, ?, ?)",
            (run_id, doc["thread_id"], assistant["assistant_id"], now, now, dumps(doc).decode()),
        )
        if state.db.dialect == "postgres":
            await tx.run("SELECT pg_notify('plait_server_wake', ?)", (run_id,))
    for cancel_id, action in to_cancel:
        await cancel_running(state, cancel_id, action)
    if not state.broker.shared:
        state.broker.open(run_id)
    if state.worker is not None:
        state.worker.wake()
    return doc
