"""Threads: create, get, update metadata, search, count, copy, delete."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.errors import CheckpointConflictError, InvalidUpdateError
from plait.server._db import Database, Tx
from plait.server._extract import extract_paths, extracted
from plait.server._http import body, json_response, opt
from plait.server._snapshot import interrupts_by_task, thread_status
from plait.server._state import ServerState, state_of
from plait.server._thread_search import order_sql, where_sql
from plait.server._ttl import ThreadTtl, expiry, thread_ttl
from plait.server._wire import (
    ApiError,
    as_dict,
    as_list,
    check_uuid,
    command_of,
    dumps,
    loads,
    now_iso,
    uuid7,
)
from plait.types import StateUpdate

__all__ = [
    "count_threads",
    "create_thread",
    "delete_thread",
    "find_threads",
    "get_thread",
    "refresh_thread",
    "routes",
    "thread_graph_id",
    "write_thread",
]

_STATUSES = ("idle", "busy", "interrupted", "error")
_FIELDS = frozenset(
    ("thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "status", "config", "values")
) | {"interrupts", "error"}
"""A thread document's fields (an ``extract`` alias may not take one's name)."""


def _doc(row: dict[str, Any], *, values: bool = True) -> dict[str, Any]:
    """A thread row as the API's document: its values come from their own column."""
    doc: dict[str, Any] = loads(row["doc"])
    doc["status"], doc["updated_at"] = row["status"], row["updated_at"]
    if values:
        doc["values"] = None if row["vals"] is None else loads(row["vals"])
    return doc


async def get_thread(db: Database | Tx, thread_id: str) -> dict[str, Any] | None:
    """The thread's document (with its status and values), or ``None``."""
    rows = await db.fetch(
        "SELECT status, updated_at, doc, vals FROM plait_server_threads WHERE thread_id = ?", (thread_id,)
    )
    return _doc(rows[0]) if rows else None


async def write_thread(db: Database | Tx, doc: dict[str, Any]) -> None:
    """Store a thread's document (status and updated_at as columns too, values in their own)."""
    rest = {k: v for k, v in doc.items() if k != "values"}
    await db.run(
        "UPDATE plait_server_threads SET status = ?, updated_at = ?, doc = ?, vals = ? WHERE thread_id = ?",
        (doc["status"], doc["updated_at"], dumps(rest).decode(), _vals(doc.get("values")), doc["thread_id"]),
    )


def _vals(values: Any) -> str | None:
    return None if values is None else dumps(values).decode()


async def create_thread(
    db: Database | Tx, thread_id: str, metadata: dict[str, Any], ttl: ThreadTtl | None = None
) -> dict[str, Any]:
    """Insert a new idle thread (the caller checked it does not exist), swept after ``ttl``."""
    now = now_iso()
    doc = {
        "thread_id": thread_id,
        "created_at": now,
        "updated_at": now,
        "state_updated_at": now,
        "metadata": metadata,
        "status": "idle",
        "config": {},  # no error / interrupts until a run or a state update sets them (as LangGraph)
    }
    await db.run(
        "INSERT INTO plait_server_threads (thread_id, status, created_at, updated_at, doc, expires_at, ttl_strategy) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            thread_id,
            "idle",
            now,
            now,
            dumps(doc).decode(),
            expiry(ttl and ttl.minutes),
            ttl and ttl.strategy,
        ),
    )
    return {**doc, "values": None}


async def _set_ttl(db: Database, thread_id: str, ttl: ThreadTtl) -> None:
    await db.run(
        "UPDATE plait_server_threads SET expires_at = ?, ttl_strategy = ? WHERE thread_id = ?",
        (expiry(ttl.minutes), ttl.strategy, thread_id),
    )


async def _with_ttl(db: Database, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its ``ttl`` (``GET /threads/{id}?include=ttl``): ``null``, or strategy, minutes left
    and when it expires."""
    rows = await db.fetch(
        "SELECT expires_at, ttl_strategy FROM plait_server_threads WHERE thread_id = ?", (doc["thread_id"],)
    )
    at = rows[0]["expires_at"] if rows else None
    if at is None:
        return {**doc, "ttl": None}
    left = max(0.0, (float(at) - time.time()) / 60)
    when = datetime.fromtimestamp(float(at), timezone.utc).isoformat()
    return {**doc, "ttl": {"strategy": rows[0]["ttl_strategy"], "ttl": left, "expires_at": when}}


def thread_graph_id(state: ServerState, doc: dict[str, Any]) -> str:
    """The graph a thread belongs to: the one its runs used, else the only configured graph."""
    graph_id = as_dict(doc.get("metadata")).get("graph_id")
    if graph_id in state.graphs:
        return str(graph_id)
    if len(state.graphs) == 1:
        return next(iter(state.graphs))
    raise ApiError(
        400, f"Thread {doc['thread_id']} has no graph yet: run it, or set metadata.graph_id"
    )  # as LangGraph


async def refresh_thread(state: ServerState, doc: dict[str, Any], graph: Any) -> None:
    """Copy the thread's newest state into its document (values, status, interrupts)."""
    snap = await graph.aget_state(thread_config(doc["thread_id"]))
    doc["values"] = snap.values
    if doc["status"] != "busy":
        doc["status"] = thread_status(snap)
    doc["interrupts"] = interrupts_by_task(snap)
    doc["error"] = None
    doc["updated_at"] = doc["state_updated_at"] = now_iso()
    await write_thread(state.db, doc)


def _supersteps(raw: Any) -> list[list[StateUpdate]]:
    """``[{"updates": [{"values" | "command", "as_node"}, ...]}, ...]`` as ``bulk_update_state`` takes it."""
    if not isinstance(raw, list):
        raise ApiError(422, f"supersteps must be a list of {{'updates': [...]}} objects, got {raw!r:.80}")
    steps: list[list[StateUpdate]] = []
    for n, step in enumerate(as_list(raw)):
        updates = as_dict(step).get("updates") if isinstance(step, dict) else None
        if not isinstance(updates, list):
            raise ApiError(422, f"supersteps[{n}] must be an object with a list 'updates', got {step!r:.80}")
        batch: list[StateUpdate] = []
        for update in as_list(updates):
            if not isinstance(update, dict):
                raise ApiError(422, f"supersteps[{n}].updates holds {update!r:.80}; each update is an object")
            item = as_dict(update)
            as_node = item.get("as_node")
            if as_node is not None and not isinstance(as_node, str):
                raise ApiError(422, f"supersteps[{n}]: as_node must be a node name, got {as_node!r}")
            command, values = item.get("command"), item.get("values")
            if command is not None and not isinstance(command, dict):
                raise ApiError(422, f"supersteps[{n}]: command must be an object, got {command!r:.80}")
            if values is not None and not isinstance(values, dict):
                raise ApiError(422, f"supersteps[{n}]: values must be an object, got {values!r:.80}")
            written = command_of(as_dict(command)) if command else None if values is None else as_dict(values)
            batch.append(StateUpdate(written, as_node))
        steps.append(batch)
    return steps


def update_refused(exc: Exception, prefix: str = "") -> ApiError | None:
    """The answer to an update a graph refused, as LangGraph's server gives it: 400 for a bad update
    (``InvalidUpdateError``, ``ValueError``, values no message can be made of), 422 for a malformed
    one (``KeyError``, ``TypeError``); ``None`` for any other error."""
    if isinstance(exc, InvalidUpdateError | ValueError | NotImplementedError):
        return ApiError(400, f"{prefix}{type(exc).__name__}: {exc}")
    if isinstance(exc, KeyError | TypeError):
        return ApiError(422, f"{prefix}{type(exc).__name__}: {exc}")
    return None


def thread_config(thread_id: str) -> dict[str, Any]:
    """The config addressing a thread's newest checkpoint (root namespace)."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


async def _apply_supersteps(
    state: ServerState, doc: dict[str, Any], graph_id: str, steps: list[list[StateUpdate]]
) -> None:
    """Write ``steps`` on the new thread (``bulk_update_state``), as the graph's nodes would have;
    a refused update deletes the thread again (nothing of the request stays)."""
    graph = state.graph(graph_id)
    metadata = {"thread_id": doc["thread_id"]}  # recorded, as LangGraph's server does here
    config = cast("RunnableConfig", {**thread_config(doc["thread_id"]), "metadata": metadata})
    try:
        await graph.abulk_update_state(config, steps)
    except CheckpointConflictError as exc:  # another request wrote the thread meanwhile: it stays
        raise ApiError(409, str(exc)) from None
    except Exception as exc:
        await _undo_create(state, doc)
        refused = update_refused(exc, "supersteps refused (no thread was kept): ")
        if refused is None:
            raise
        raise refused from None
    doc["metadata"] = {**doc["metadata"], "graph_id": graph_id}
    await refresh_thread(state, doc, graph)


async def _undo_create(state: ServerState, doc: dict[str, Any]) -> None:
    """Delete a thread this request made, unless another request has used it since (a run, an update)."""
    gone = await state.db.run(
        "DELETE FROM plait_server_threads WHERE thread_id = ? AND updated_at = ? "
        "AND NOT EXISTS (SELECT 1 FROM plait_server_runs WHERE thread_id = ?)",
        (doc["thread_id"], doc["updated_at"], doc["thread_id"]),
    )
    if gone:
        await state.saver.adelete_thread(doc["thread_id"])


async def found_thread(request: Request) -> dict[str, Any]:
    """The thread of the path, or 404."""
    thread_id = check_uuid(request.path_params["thread_id"], "thread ID")
    doc = await get_thread(state_of(request).db, thread_id)
    if doc is None:
        raise ApiError(404, f"Thread {thread_id} not found")
    return doc


async def create(request: Request) -> Response:
    """``POST /threads``."""
    state = state_of(request)
    data = await body(request, required=True)  # as LangGraph's server: a body, if only {}
    ttl = thread_ttl(data.get("ttl"), state.settings.thread_ttl)
    steps = _supersteps(data["supersteps"]) if data.get("supersteps") is not None else []
    thread_id = check_uuid(opt(data, "thread_id", str) or uuid7(), "thread ID")
    metadata = as_dict(opt(data, "metadata", dict))
    if_exists = opt(data, "if_exists", str) or "raise"
    if if_exists not in ("raise", "do_nothing"):
        raise ApiError(422, f"if_exists must be 'raise' or 'do_nothing', got {if_exists!r}")
    existing = await get_thread(state.db, thread_id)
    if existing is not None:
        if if_exists == "do_nothing":
            return json_response(existing)
        raise ApiError(409, f"Thread with ID {thread_id} already exists")
    # the graph the supersteps write: checked before the thread is made
    graph_id = thread_graph_id(state, {"thread_id": thread_id, "metadata": metadata}) if steps else ""
    try:
        doc = await create_thread(state.db, thread_id, metadata, ttl)
    except Exception:  # noqa: BLE001 - created concurrently by another request
        if await get_thread(state.db, thread_id) is None:
            raise
        raise ApiError(409, f"Thread with ID {thread_id} already exists") from None
    if steps:
        await _apply_supersteps(state, doc, graph_id, steps)
    return json_response(doc)


async def get(request: Request) -> Response:
    """``GET /threads/{thread_id}`` (``?include=ttl``: with its time to live)."""
    doc = await found_thread(request)
    include = {part.strip() for raw in request.query_params.getlist("include") for part in raw.split(",")}
    if "ttl" in include:  # the SDK joins several with commas
        doc = await _with_ttl(state_of(request).db, doc)
    return json_response(doc)


async def patch(request: Request) -> Response:
    """``PATCH /threads/{thread_id}``: merge metadata."""
    doc = await found_thread(request)
    data = await body(request)
    if data.get("ttl") is not None:  # the clock starts again from now
        await _set_ttl(state_of(request).db, doc["thread_id"], cast("ThreadTtl", thread_ttl(data["ttl"])))
    doc["metadata"] = {**doc["metadata"], **(as_dict(opt(data, "metadata", dict)))}
    doc["updated_at"] = now_iso()
    await write_thread(state_of(request).db, doc)
    return json_response(doc)


async def delete(request: Request) -> Response:
    """``DELETE /threads/{thread_id}``: the thread, its runs and its checkpoints."""
    doc = await found_thread(request)
    await delete_thread(state_of(request), doc["thread_id"])
    return Response(status_code=204)


async def delete_thread(state: ServerState, thread_id: str) -> None:
    """Cancel the thread's runs, then delete its rows, its runs, its crons and its checkpoints."""
    inflight = await state.db.fetch(
        "SELECT run_id, status FROM plait_server_runs WHERE thread_id = ? AND status IN ('pending', 'running')",
        (thread_id,),
    )
    for row in inflight:
        if row["status"] != "running":
            continue
        if state.worker is None or not state.worker.cancel_local(row["run_id"], "interrupt"):
            await state.db.notify("plait_server_cancel", f"{row['run_id']}:interrupt")
    lock = " FOR UPDATE" if state.db.dialect == "postgres" else ""
    async with state.db.tx() as tx:  # the thread's row first, then its runs: the order a run's end locks them
        await tx.fetch(f"SELECT 1 FROM plait_server_threads WHERE thread_id = ?{lock}", (thread_id,))
        await tx.run("DELETE FROM plait_server_runs WHERE thread_id = ?", (thread_id,))
        await tx.run("DELETE FROM plait_server_threads WHERE thread_id = ?", (thread_id,))
        await tx.run("DELETE FROM plait_server_crons WHERE thread_id = ?", (thread_id,))
    await state.saver.adelete_thread(thread_id)
    for row in inflight:  # queued runs end for their followers (running ones end as they stop)
        if row["status"] == "pending":
            await state.broker.end_unrun(row["run_id"], "interrupted")


async def prune(request: Request) -> Response:
    """``POST /threads/prune``: delete threads (``strategy: "delete"``) or their checkpoints but the
    newest of each namespace (``"keep_latest"``); unknown threads are skipped. ``{"pruned_count": n}``."""
    state = state_of(request)
    data = await body(request, required=True)
    raw = as_list(data.get("thread_ids"))
    if not isinstance(data.get("thread_ids"), list):
        raise ApiError(422, f"thread_ids must be a list of thread ids, got {data.get('thread_ids')!r}")
    ids = [check_uuid(t, "thread ID") for t in raw]
    strategy = opt(data, "strategy", str) or "delete"
    if strategy not in ("delete", "keep_latest"):
        raise ApiError(422, f"Invalid strategy: {strategy}. Expected 'delete' or 'keep_latest'.")
    pruned = 0
    for thread_id in dict.fromkeys(ids):
        found = await state.db.fetch("SELECT 1 FROM plait_server_threads WHERE thread_id = ?", (thread_id,))
        if not found:
            continue
        if strategy == "delete":
            await delete_thread(state, thread_id)
        else:  # safe beside a run writing the thread (see BaseCheckpointSaver.prune)
            await state.saver.aprune(thread_id, keep_last=1)
        pruned += 1
    return json_response({"pruned_count": pruned})


def _filters(db: Database, data: dict[str, Any]) -> tuple[str, list[Any]]:
    """`` WHERE ...`` and its parameters for the threads ``data`` selects."""
    metadata = as_dict(opt(data, "metadata", dict))
    values = as_dict(opt(data, "values", dict))
    status = opt(data, "status", str)
    if status is not None and status not in _STATUSES:
        raise ApiError(422, f"status must be one of {list(_STATUSES)}, got {status!r}")
    return where_sql(db.dialect, metadata, values, status, opt(data, "ids", list))


async def find_threads(db: Database, data: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The rows of the page a ``/threads/search`` body asks for, and how many threads match in all."""
    where, params = _filters(db, data)
    order = order_sql(
        db.dialect, opt(data, "sort_by", str) or "created_at", opt(data, "sort_order", str) or "desc"
    )
    limit, offset = opt(data, "limit", int) or 10, opt(data, "offset", int) or 0
    rows = await db.fetch(
        "SELECT status, updated_at, doc, vals, count(*) OVER () AS total FROM plait_server_threads"
        f"{where}{order} LIMIT ? OFFSET ?",
        [*params, max(limit, 0), max(offset, 0)],
    )
    total = int(rows[0]["total"]) if rows else await _count(db, where, params) if offset > 0 else 0
    return rows, total


async def count_threads(db: Database, data: dict[str, Any]) -> int:
    """How many threads a ``/threads/count`` body selects."""
    return await _count(db, *_filters(db, data))


async def _count(db: Database, where: str, params: list[Any]) -> int:
    rows = await db.fetch(f"SELECT count(*) AS n FROM plait_server_threads{where}", params)
    return int(rows[0]["n"])


async def search(request: Request) -> Response:
    """``POST /threads/search``: by metadata, values, status and ids; sorted and paged in the database."""
    data = await body(request)
    select = opt(data, "select", list)
    paths = extract_paths(data.get("extract"), {*_FIELDS, "extracted"})
    rows, total = await find_threads(state_of(request).db, data)
    page = [_doc(row) for row in rows]
    if paths:
        page = [{**doc, "extracted": extracted(doc, paths)} for doc in page]
    keep = [*select, "extracted"] if select and paths else select
    if keep:
        page = [{k: d.get(k) for k in keep} for d in page]
    limit, offset = opt(data, "limit", int) or 10, opt(data, "offset", int) or 0
    headers = {"X-Pagination-Total": str(total)}
    if offset + limit < total:
        headers["X-Pagination-Next"] = str(offset + limit)
    return json_response(page, headers=headers)


async def count(request: Request) -> Response:
    """``POST /threads/count``."""
    return json_response(await count_threads(state_of(request).db, await body(request)))


async def copy(request: Request) -> Response:
    """``POST /threads/{thread_id}/copy``: a new thread with the same checkpoints and metadata."""
    state = state_of(request)
    doc = await found_thread(request)
    new_id = uuid7()
    saver = state.saver
    source = {"configurable": {"thread_id": doc["thread_id"], "checkpoint_ns": ""}}
    saved = [t async for t in saver.alist(source)]
    for item in reversed(saved):
        parent = item.parent_config["configurable"]["checkpoint_id"] if item.parent_config else None
        target = {"configurable": {"thread_id": new_id, "checkpoint_ns": "", "checkpoint_id": parent}}
        written = await saver.aput(
            target, item.checkpoint, item.metadata, dict(item.checkpoint["channel_versions"])
        )
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in item.pending_writes or ():
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            await saver.aput_writes(written, writes, task_id)
    new = await create_thread(state.db, new_id, doc["metadata"], thread_ttl(None, state.settings.thread_ttl))
    new.update(
        values=doc.get("values"),
        interrupts=doc.get("interrupts") or {},
        status=doc["status"] if doc["status"] != "busy" else "idle",
    )
    await write_thread(state.db, new)
    # as LangGraph's server answers a copy: the thread without its values and interrupts (a get has them)
    return json_response({k: v for k, v in new.items() if k not in ("values", "interrupts")})


routes = [
    Route("/threads", create, methods=["POST"]),
    Route("/threads/search", search, methods=["POST"]),
    Route("/threads/count", count, methods=["POST"]),
    Route("/threads/prune", prune, methods=["POST"]),
    Route("/threads/{thread_id}", get, methods=["GET"]),
    Route("/threads/{thread_id}", patch, methods=["PATCH"]),
    Route("/threads/{thread_id}", delete, methods=["DELETE"]),
    Route("/threads/{thread_id}/copy", copy, methods=["POST"]),
]
