"""Threads: create, get, update metadata, search, count, copy, delete (models: :mod:`._thread_models`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from starlette.requests import Request
from starlette.responses import Response

from plait.errors import CheckpointConflictError, InvalidUpdateError
from plait.server._api import Api
from plait.server._auth import authorize
from plait.server._auth_filter import Filter, permits
from plait.server._data import runs, threads
from plait.server._db import Database, Tx
from plait.server._extract import extract_paths, extracted
from plait.server._http import json_response
from plait.server._records import ThreadDoc
from plait.server._snapshot import interrupts_by_task, thread_status
from plait.server._state import ServerState, state_of
from plait.server._thread_models import (
    THREAD_FIELDS,
    Superstep,
    Thread,
    ThreadCountRequest,
    ThreadCreate,
    ThreadGetQuery,
    ThreadPatch,
    ThreadPruneRequest,
    ThreadPruneResponse,
    ThreadSearchRequest,
    ttl_of,
)
from plait.server._ttl import ThreadTtl, expiry, thread_ttl
from plait.server._wire import ApiError, as_dict, check_uuid, command_of, now_iso, uuid7
from plait.types import StateUpdate

__all__ = [
    "count_threads",
    "create_thread",
    "delete_thread",
    "find_threads",
    "api",
    "get_thread",
    "refresh_thread",
    "routes",
    "thread_graph_id",
    "write_thread",
]

api = Api("Threads", "A thread holds the state its runs build, checkpoint by checkpoint.")


get_thread = threads.get
"""The thread's document (with its status and values), or ``None`` (:func:`plait.server._data.threads.get`)."""
write_thread = threads.write
"""Store a thread's document (:func:`plait.server._data.threads.write`)."""


async def create_thread(
    db: Database | Tx, thread_id: str, metadata: dict[str, object], ttl: ThreadTtl | None = None
) -> ThreadDoc:
    """Insert a new idle thread (the caller checked it does not exist), swept after ``ttl``."""
    now = now_iso()
    doc: ThreadDoc = {
        "thread_id": thread_id,
        "created_at": now,
        "updated_at": now,
        "state_updated_at": now,
        "metadata": metadata,
        "status": "idle",
        "config": {},  # no error / interrupts until a run or a state update sets them (as LangGraph)
    }
    await threads.insert(db, doc, expiry(ttl and ttl.minutes), ttl and ttl.strategy)
    return {**doc, "values": None}


async def _with_ttl(db: Database, doc: ThreadDoc) -> dict[str, object]:
    """``doc`` with its ``ttl`` (``GET /threads/{id}?include=ttl``): ``null``, or strategy, minutes left
    and when it expires."""
    found = await threads.ttl(db, doc["thread_id"])
    if found is None:
        return {**doc, "ttl": None}
    at, strategy = found
    left = max(0.0, (at - time.time()) / 60)
    when = datetime.fromtimestamp(at, timezone.utc).isoformat()
    return {**doc, "ttl": {"strategy": strategy, "ttl": left, "expires_at": when}}


def thread_graph_id(state: ServerState, doc: Mapping[str, object]) -> str:
    """The graph a thread belongs to: the one its runs used, else the only configured graph."""
    graph_id = as_dict(doc.get("metadata")).get("graph_id")
    if graph_id in state.graphs:
        return str(graph_id)
    if len(state.graphs) == 1:
        return next(iter(state.graphs))
    raise ApiError(
        400, f"Thread {doc['thread_id']} has no graph yet: run it, or set metadata.graph_id"
    )  # as LangGraph


async def refresh_thread(state: ServerState, doc: ThreadDoc, graph: Any) -> ThreadDoc:
    """Copy the thread's newest state into its document (values, status, interrupts) and its
    ``graph_id`` into its metadata, on the thread as it is stored now (a run may have started or
    ended since ``doc`` was read); the stored document (``doc`` when the thread is gone)."""
    snap = await graph.aget_state(thread_config(doc["thread_id"]))
    graph_id, now = as_dict(doc.get("metadata")).get("graph_id"), now_iso()

    def refresh(current: ThreadDoc) -> None:
        current["values"] = snap.values
        if current["status"] != "busy":
            current["status"] = thread_status(snap)
        current["interrupts"] = interrupts_by_task(snap)
        current["error"] = None
        current["updated_at"] = current["state_updated_at"] = now
        if graph_id is not None:
            current["metadata"] = {**as_dict(current.get("metadata")), "graph_id": graph_id}

    stored = await threads.modify(state.db, doc["thread_id"], refresh)
    return doc if stored is None else stored


def _supersteps(steps: list[Superstep]) -> list[list[StateUpdate]]:
    """The request's supersteps as ``bulk_update_state`` takes them (a command rather than values)."""
    out: list[list[StateUpdate]] = []
    for step in steps:
        batch: list[StateUpdate] = []
        for update in step.updates:
            command = update.command.model_dump(exclude_unset=True) if update.command is not None else {}
            batch.append(StateUpdate(command_of(command) if command else update.values, update.as_node))
        out.append(batch)
    return out


def update_refused(exc: Exception, prefix: str = "") -> ApiError | None:
    """The answer to an update a graph refused, as LangGraph's server gives it: 400 for a bad update
    (``InvalidUpdateError``, ``ValueError``, values no message can be made of), 422 for a malformed
    one (``KeyError``, ``TypeError``); ``None`` for any other error."""
    if isinstance(exc, InvalidUpdateError | ValueError | NotImplementedError):
        return ApiError(400, f"{prefix}{type(exc).__name__}: {exc}")
    if isinstance(exc, KeyError | TypeError):
        return ApiError(422, f"{prefix}{type(exc).__name__}: {exc}")
    return None


def thread_config(thread_id: str) -> dict[str, dict[str, object]]:
    """The config addressing a thread's newest checkpoint (root namespace)."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


async def _apply_supersteps(
    state: ServerState, doc: ThreadDoc, graph_id: str, steps: list[list[StateUpdate]]
) -> ThreadDoc:
    """Write ``steps`` on the new thread (``bulk_update_state``), as the graph's nodes would have;
    a refused update deletes the thread again (nothing of the request stays). The stored document."""
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
    return await refresh_thread(state, doc, graph)


async def _undo_create(state: ServerState, doc: ThreadDoc) -> None:
    """Delete a thread this request made, unless another request has used it since (a run, an update)."""
    if await threads.delete_unused(state.db, doc["thread_id"], doc["updated_at"]):
        await state.saver.adelete_thread(doc["thread_id"])


async def found_thread(
    request: Request, action: str = "read", value: dict[str, object] | None = None
) -> ThreadDoc:
    """The thread of the path, once the auth allows ``action`` on it (``value``: the action's, which
    the auth's handler may change; it gets the ``thread_id``); 404 when it does not exist or the
    auth's filter hides it."""
    thread_id = check_uuid(request.path_params["thread_id"], "thread ID")
    value = {} if value is None else value
    value["thread_id"] = thread_id
    filters = await authorize(request, "threads", action, value)
    doc = await get_thread(state_of(request).db, thread_id)
    if doc is None or not permits(filters, doc.get("metadata")):
        raise ApiError(404, f"Thread {thread_id} not found")
    return doc


# (as LangGraph's server: a body is required, if only {})
@api.post("/threads", "Create Thread", body=ThreadCreate, body_required=True, response=Thread)
async def create(request: Request, body: ThreadCreate) -> Response:
    """A new thread; ``supersteps`` write its first state as the graph's nodes would have."""
    state = state_of(request)
    ttl = ttl_of(body.ttl) or thread_ttl(None, state.settings.thread_ttl)
    steps = _supersteps(body.supersteps or [])
    thread_id = body.thread_id or uuid7()
    value: dict[str, object] = {
        "thread_id": thread_id,
        "metadata": dict(body.metadata or {}),
        "if_exists": body.if_exists,
    }
    filters = await authorize(request, "threads", "create", value)
    metadata = as_dict(value.get("metadata"))
    existing = await get_thread(state.db, thread_id)
    if existing is not None and not permits(filters, existing.get("metadata")):  # another user's
        raise ApiError(409, f"Thread with ID {thread_id} already exists")
    if existing is not None:
        if body.if_exists == "do_nothing":
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
        doc = await _apply_supersteps(state, doc, graph_id, steps)
    return json_response(doc)


@api.get("/threads/{thread_id}", "Get Thread", query=ThreadGetQuery, response=Thread)
async def get(request: Request, query: ThreadGetQuery) -> Response:
    """The thread (``?include=ttl``: with its time to live)."""
    doc = await found_thread(request)
    include = {part.strip() for raw in query.include for part in raw.split(",")}
    if "ttl" in include:  # the SDK joins several with commas
        return json_response(await _with_ttl(state_of(request).db, doc))
    return json_response(doc)


@api.patch("/threads/{thread_id}", "Patch Thread", body=ThreadPatch, response=Thread)
async def patch(request: Request, body: ThreadPatch) -> Response:
    """Merge metadata into the thread's; a ``ttl`` counts again from now."""
    value: dict[str, object] = {"metadata": dict(body.metadata or {})}
    doc = await found_thread(request, "update", value)
    db = state_of(request).db
    ttl = ttl_of(body.ttl)
    if ttl is not None:
        await threads.set_ttl(db, doc["thread_id"], expiry(ttl.minutes), ttl.strategy)
    added, now = as_dict(value.get("metadata")), now_iso()

    def merge(current: ThreadDoc) -> None:  # (the thread as it is now: a run may have ended since)
        current["metadata"] = {**as_dict(current.get("metadata")), **added}
        current["updated_at"] = now

    stored = await threads.modify(db, doc["thread_id"], merge)
    if stored is None:  # deleted meanwhile
        raise ApiError(404, f"Thread {doc['thread_id']} not found")
    return json_response(stored)


@api.delete("/threads/{thread_id}", "Delete Thread", status=204)
async def delete(request: Request) -> Response:
    """Delete the thread, its runs, its crons and its checkpoints (its running runs are cancelled)."""
    doc = await found_thread(request, "delete")
    await delete_thread(state_of(request), doc["thread_id"])
    return Response(status_code=204)


async def delete_thread(state: ServerState, thread_id: str) -> None:
    """Cancel the thread's runs, then delete its rows, its runs, its crons and its checkpoints."""
    inflight = await runs.inflight(state.db, thread_id)
    for row in inflight:
        if row["status"] != "running":
            continue
        if state.worker is None or not state.worker.cancel_local(row["run_id"], "interrupt"):
            await state.db.notify("plait_server_cancel", f"{row['run_id']}:interrupt")
    await threads.delete(state.db, thread_id)  # (the thread's row locked first: see its docstring)
    await state.saver.adelete_thread(thread_id)
    for row in inflight:  # queued runs end for their followers (running ones end as they stop)
        if row["status"] == "pending":
            await state.broker.end_unrun(row["run_id"], "interrupted")


@api.post(
    "/threads/prune",
    "Prune Threads",
    body=ThreadPruneRequest,
    body_required=True,
    response=ThreadPruneResponse,
)
async def prune(request: Request, body: ThreadPruneRequest) -> Response:
    """Delete threads (``strategy: "delete"``) or their checkpoints but the newest of each
    namespace (``"keep_latest"``); unknown threads are skipped."""
    state = state_of(request)
    strategy = body.strategy or "delete"
    ids = list(dict.fromkeys(body.thread_ids))
    filters = await authorize(request, "threads", "delete", {"thread_ids": ids})
    found = [await get_thread(state.db, thread_id) for thread_id in ids]
    for thread_id, doc in zip(ids, found, strict=True):  # (as LangGraph's server: another user's is a 404)
        if doc is not None and not permits(filters, doc.get("metadata")):
            raise ApiError(404, f"Thread {thread_id} not found")
    pruned = 0
    for thread_id, doc in zip(ids, found, strict=True):
        if doc is None:
            continue
        if strategy == "delete":
            await delete_thread(state, thread_id)
        else:  # safe beside a run writing the thread (see BaseCheckpointSaver.prune)
            await state.saver.aprune(thread_id, keep_last=1)
        pruned += 1
    return json_response({"pruned_count": pruned})


_Wanted = TypeVar("_Wanted", bound=ThreadCountRequest)


def _query(wanted: ThreadCountRequest, auth: Filter | None) -> threads.ThreadQuery:
    """The threads a search or count selects (``auth``: of those the auth's filter keeps)."""
    ids = wanted.ids if isinstance(wanted, ThreadSearchRequest) else None
    return threads.ThreadQuery(wanted.metadata or {}, wanted.values or {}, wanted.status, ids, auth)


async def _searched(request: Request, wanted: _Wanted) -> tuple[_Wanted, Filter | None]:
    """Ask the auth to search threads: the request (its metadata as the handler left it) and the filter."""
    value: dict[str, object] = {"metadata": dict(wanted.metadata or {}), "values": wanted.values or {}}
    value["status"] = wanted.status
    if isinstance(wanted, ThreadSearchRequest):
        value.update(limit=wanted.limit, offset=wanted.offset, ids=wanted.ids)
    filters = await authorize(request, "threads", "search", value)
    return wanted.model_copy(update={"metadata": as_dict(value.get("metadata")) or None}), filters


async def find_threads(
    db: Database, wanted: ThreadSearchRequest, auth: Filter | None = None
) -> tuple[list[dict[str, object]], int]:
    """The rows of the page a ``/threads/search`` body asks for (``auth``: of those the auth's filter
    keeps), and how many threads match in all."""
    sort_by, sort_order = wanted.sort_by or "created_at", wanted.sort_order or "desc"
    return await threads.search(db, _query(wanted, auth), sort_by, sort_order, wanted.limit, wanted.offset)


async def count_threads(db: Database, wanted: ThreadCountRequest, auth: Filter | None = None) -> int:
    """How many threads a ``/threads/count`` body selects (``auth``: of those the auth's filter keeps)."""
    return await threads.count(db, _query(wanted, auth))


@api.post("/threads/search", "Search Threads", body=ThreadSearchRequest, response=list[Thread])
async def search(request: Request, body: ThreadSearchRequest) -> Response:
    """Threads by metadata, values, status and ids; sorted and paged (``X-Pagination-Total`` and
    ``X-Pagination-Next`` headers)."""
    select = body.select
    paths = extract_paths(body.extract, set(THREAD_FIELDS))
    wanted, filters = await _searched(request, body)
    rows, total = await find_threads(state_of(request).db, wanted, filters)
    page: list[Mapping[str, object]] = [threads.document(row) for row in rows]
    if paths:
        page = [{**doc, "extracted": extracted(doc, paths)} for doc in page]
    keep = [*select, "extracted"] if select and paths else select
    if keep:
        page = [{k: d.get(k) for k in keep} for d in page]
    limit, offset = body.limit, body.offset
    headers = {"X-Pagination-Total": str(total)}
    if offset + limit < total:
        headers["X-Pagination-Next"] = str(offset + limit)
    return json_response(page, headers=headers)


@api.post("/threads/count", "Count Threads", body=ThreadCountRequest, response=int)
async def count(request: Request, body: ThreadCountRequest) -> Response:
    """How many threads the filters select."""
    wanted, filters = await _searched(request, body)
    return json_response(await count_threads(state_of(request).db, wanted, filters))


@api.post("/threads/{thread_id}/copy", "Copy Thread", response=Thread)
async def copy(request: Request) -> Response:
    """A new thread with the same checkpoints and metadata."""
    state = state_of(request)
    doc = await found_thread(request)
    new_id = uuid7()
    made: dict[str, object] = {"thread_id": new_id, "metadata": dict(doc["metadata"])}
    await authorize(request, "threads", "create", made)  # (as LangGraph's server: the copier may create)
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
    ttl = thread_ttl(None, state.settings.thread_ttl)
    new = await create_thread(state.db, new_id, as_dict(made.get("metadata")), ttl)
    new["values"] = doc.get("values")
    new["interrupts"] = doc.get("interrupts") or {}
    new["status"] = doc["status"] if doc["status"] != "busy" else "idle"
    await write_thread(state.db, new)
    # as LangGraph's server answers a copy: the thread without its values and interrupts (a get has them)
    return json_response({k: v for k, v in new.items() if k not in ("values", "interrupts")})


routes = api.routes()
