"""Runs: background, wait, stream, join, join_stream, cancel, get, list, delete."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from plait.server._api import Api, validated
from plait.server._auth import authorize
from plait.server._auth_filter import permits
from plait.server._auth_runs import RunAccess, run_access
from plait.server._create import cancel_running, create_run, run_json
from plait.server._data import runs
from plait.server._http import json_response
from plait.server._records import RunDoc
from plait.server._run_models import (
    Run,
    RunCancelQuery,
    RunCreate,
    RunJoinStreamQuery,
    RunListQuery,
    RunsCancel,
    RunsCancelQuery,
)
from plait.server._snapshot import output_interrupts
from plait.server._state import ServerState, state_of
from plait.server._stream import END, outcome
from plait.server._threads import found_thread, get_thread
from plait.server._wire import ApiError, as_dict, check_uuid, dumps

__all__ = ["api", "routes", "stateless"]

api = Api("Thread Runs", "A run executes an assistant's graph on a thread, adding to the thread's state.")
stateless = Api("Stateless Runs", "A run on a thread of its own, deleted when the run ends (unless kept).")
_OUTPUT = {"description": "The run's output: its final values (with ``__interrupt__``), or ``__error__``."}


def _locations(doc: RunDoc, stateless: bool, suffix: str) -> dict[str, str]:
    run = f"/runs/{doc['run_id']}" if stateless else f"/threads/{doc['thread_id']}/runs/{doc['run_id']}"
    if stateless and suffix:
        run = f"/threads/{doc['thread_id']}/runs/{doc['run_id']}"
    return {"Location": run + suffix, "Content-Location": run} if suffix else {"Content-Location": run}


async def _thread_param(request: Request) -> str | None:
    raw = request.path_params.get("thread_id")
    return None if raw is None else check_uuid(raw, "thread ID")


async def _access(
    request: Request, thread_id: str | None, body: RunCreate
) -> tuple[RunCreate, RunAccess | None]:
    """Ask the config's auth about the run (:func:`run_access`, whose handlers may change the
    request): the request as they left it, checked again, and what the user may see."""
    data = body.model_dump(exclude_unset=True)
    access = await run_access(request, thread_id, data)
    return (body, None) if access is None else (validated(RunCreate, data), access)


@api.post(
    "/threads/{thread_id}/runs", "Create Background Run", body=RunCreate, body_required=True, response=Run
)
@stateless.post("/runs", "Create Background Run", body=RunCreate, body_required=True, response=Run)
async def create(request: Request, body: RunCreate) -> Response:
    """Queue a run (on the thread of the path, or stateless); its document at once."""
    thread_id = await _thread_param(request)
    body, access = await _access(request, thread_id, body)
    doc = await create_run(state_of(request), thread_id, body, access=access)
    return json_response(doc, headers=_locations(doc, thread_id is None, ""))


@stateless.post(
    "/runs/batch", "Create Run Batch", body=list[RunCreate], body_required=True, response=list[Run]
)
async def create_batch(request: Request, body: list[RunCreate]) -> Response:
    """Several stateless background runs."""
    made: list[RunDoc] = []
    for item in body:
        item, access = await _access(request, None, item)
        made.append(await create_run(state_of(request), None, item, access=access))
    return json_response(made)


async def _final(state: ServerState, doc: RunDoc) -> object:
    """The run's outcome once it ended: values (with ``__interrupt__``), or ``{"__error__": …}``."""
    log = state.broker.logs.get(doc["run_id"])
    if log is not None:  # it runs in this process: its output is encoded already
        await log.wait_done()
        if log.result is not None:
            return orjson.Fragment(log.result)
    async for _, event, data in state.broker.follow(doc["run_id"]):
        if event == END:
            log = state.broker.logs.get(doc["run_id"])
            if log is not None and log.done and log.result is not None:  # it ended here after all
                return orjson.Fragment(log.result)
            result = outcome(data)
            return {"__error__": result["error"]} if result["status"] == "error" else result["values"]
    thread = await get_thread(state.db, doc["thread_id"])
    while thread is not None and await _active(state, doc["run_id"]):
        await asyncio.sleep(0.1)  # ran in another process without a shared log (not expected)
        thread = await get_thread(state.db, doc["thread_id"])
    if thread is None:
        return None
    values, interrupts = thread.get("values"), thread.get("interrupts")
    if not interrupts:
        return values
    if isinstance(values, dict):
        return {**as_dict(values), "__interrupt__": output_interrupts(interrupts)}
    return values


async def _active(state: ServerState, run_id: str) -> bool:
    return await runs.status(state.db, run_id) in ("pending", "running")


@api.post(
    "/threads/{thread_id}/runs/wait",
    "Create Run, Wait for Output",
    body=RunCreate,
    body_required=True,
    response=_OUTPUT,
)
@stateless.post(
    "/runs/wait", "Create Run, Wait for Output", body=RunCreate, body_required=True, response=_OUTPUT
)
async def wait(request: Request, body: RunCreate) -> Response:
    """Run, and answer its output once it ends."""
    state = state_of(request)
    thread_id = await _thread_param(request)
    body, access = await _access(request, thread_id, body)
    doc = await create_run(state, thread_id, body, wait=True, access=access)
    result = await _final(state, doc)
    return json_response(result, headers=_locations(doc, thread_id is None, "/join"))


def _wanted(modes: list[str]) -> set[str] | None:
    if not modes:
        return None
    names = set(modes)
    if "messages-tuple" in names:
        names.add("messages")
    if "messages" in modes:
        names |= {"messages/metadata", "messages/partial", "messages/complete"}
    return names | {"error", "metadata"}


async def _events(
    state: ServerState, doc: RunDoc, after: int, modes: list[str], first: bool
) -> AsyncIterator[dict[str, object]]:
    wanted = _wanted(modes)
    if first:
        yield {"event": "metadata", "data": dumps({"run_id": doc["run_id"], "attempt": 1}).decode()}
    async for seq, event, data in state.broker.follow(doc["run_id"], after):
        if event == END:
            return
        if wanted is None or event.split("|")[0] in wanted:
            yield {"event": event, "data": data.decode(), "id": str(seq)}


def _sse(
    request: Request,
    events: AsyncIterator[dict[str, object]],
    headers: dict[str, str],
    on_disconnect: Any = None,
) -> Response:
    async def guarded() -> AsyncIterator[dict[str, object]]:
        try:
            async for item in events:
                yield item
        except asyncio.CancelledError:
            if on_disconnect is not None:
                await on_disconnect()
            raise

    return EventSourceResponse(guarded(), headers={**headers, "Cache-Control": "no-store"}, ping=15)


@api.post(
    "/threads/{thread_id}/runs/stream",
    "Create Run, Stream Output",
    body=RunCreate,
    body_required=True,
    stream=True,
)
@stateless.post("/runs/stream", "Create Run, Stream Output", body=RunCreate, body_required=True, stream=True)
async def stream(request: Request, body: RunCreate) -> Response:
    """Run, and stream its events (server-sent events, ``stream_mode``'s) until it ends."""
    state = state_of(request)
    thread_id = await _thread_param(request)
    on_disconnect = body.on_disconnect or "continue"
    body, access = await _access(request, thread_id, body)
    doc = await create_run(state, thread_id, body, follow=True, access=access)

    async def cancel() -> None:
        await _cancel(state, doc["run_id"], "interrupt")

    events = _events(state, doc, 0, [], True)
    return _sse(
        request,
        events,
        _locations(doc, thread_id is None, "/stream"),
        cancel if on_disconnect == "cancel" else None,
    )


async def _found_run(
    request: Request, action: str = "read", value: dict[str, object] | None = None
) -> RunDoc:
    """The run of the path, once the auth allows ``action`` on its thread (404: no such run, or a
    thread the auth's filter hides)."""
    state = state_of(request)
    run_id = check_uuid(request.path_params["run_id"], "run ID")
    thread = await found_thread(request, action, {"run_id": run_id, **(value or {})})
    row = await runs.get_on_thread(state.db, run_id, thread["thread_id"])
    if row is None:
        raise ApiError(404, f"Run {run_id} not found in thread {thread['thread_id']}")
    return run_json(row)


@api.get("/threads/{thread_id}/runs/{run_id}", "Get Run", response=Run)
async def get(request: Request) -> Response:
    """The run."""
    return json_response(await _found_run(request))


@api.get("/threads/{thread_id}/runs", "List Runs", query=RunListQuery, response=list[Run])
async def list_runs(request: Request, query: RunListQuery) -> Response:
    """The thread's runs, newest first."""
    state = state_of(request)
    thread = await found_thread(request)
    filters = await authorize(
        request, "threads", "search", {"thread_id": thread["thread_id"], "metadata": {}}
    )
    if not permits(filters, thread.get("metadata")):  # (as LangGraph's server lists runs)
        raise ApiError(404, f"Thread {thread['thread_id']} not found")
    rows = await runs.list_on_thread(state.db, thread["thread_id"], query.status, query.limit, query.offset)
    return json_response([run_json(r) for r in rows])


@api.delete("/threads/{thread_id}/runs/{run_id}", "Delete Run", status=204)
async def delete(request: Request) -> Response:
    """Delete the run (a pending or running run: cancel it first, 409)."""
    state = state_of(request)
    doc = await _found_run(request, "delete")
    if doc["status"] in ("pending", "running"):
        raise ApiError(409, f"Run {doc['run_id']} is {doc['status']}: cancel it before deleting it")
    await runs.delete(state.db, doc["run_id"])
    return Response(status_code=204)


async def _cancel(state: ServerState, run_id: str, action: str) -> None:
    status = await runs.status(state.db, run_id)
    if status not in ("pending", "running"):
        return
    if status == "pending":
        if await runs.interrupt_pending(state.db, run_id):
            if action == "rollback":
                await runs.delete(state.db, run_id)
            await state.broker.end_unrun(run_id, "interrupted")
            if state.worker is not None:  # a run queued behind it may start now
                state.worker.wake()
            return
    await cancel_running(state, run_id, action)


@api.post("/threads/{thread_id}/runs/{run_id}/cancel", "Cancel Run", query=RunCancelQuery, status=202)
async def cancel(request: Request, query: RunCancelQuery) -> Response:
    """Cancel a pending or running run (``wait``: answer 200 once it has stopped)."""
    state = state_of(request)
    action = query.action
    doc = await _found_run(request, "update", {"action": action})
    if doc["status"] not in ("pending", "running"):
        raise ApiError(409, f"Run {doc['run_id']} is already {doc['status']}")
    await _cancel(state, doc["run_id"], action)
    if query.wait:
        while await _active(state, doc["run_id"]):
            await asyncio.sleep(0.05)
        return json_response({})  # LangGraph's server: the run's output after the cancel, none
    return Response(status_code=202)


@api.post(
    "/runs/cancel", "Cancel Runs", body=RunsCancel, body_required=True, query=RunsCancelQuery, status=204
)
async def cancel_many(request: Request, body: RunsCancel, query: RunsCancelQuery) -> Response:
    """Cancel the runs ``run_ids`` of the thread ``thread_id``, or every run with a ``status``."""
    state = state_of(request)
    action = query.action
    status = body.status
    if status is not None and (body.thread_id is not None or body.run_ids is not None):
        raise ApiError(
            422, "Cannot specify 'thread_id' or 'run_ids' with 'status' (it cancels every run with it)"
        )
    if status is None and (body.thread_id is None or body.run_ids is None):
        raise ApiError(422, "Provide either a 'status', or both 'thread_id' and 'run_ids'")
    value: dict[str, object] = {"thread_id": body.thread_id, "action": action}
    filters = await authorize(request, "threads", "update", value)
    if status is not None:
        wanted = ("pending", "running") if status == "all" else (status,)
        run_ids = await runs.ids_with_status(state.db, wanted)
    else:
        thread_id = check_uuid(str(body.thread_id), "thread ID")
        given = [check_uuid(r, "run ID") for r in body.run_ids or []]
        run_ids = await runs.ids_on_thread(state.db, given, thread_id) if given else []
        if not run_ids:
            raise ApiError(404, f"No runs of thread {thread_id} found to cancel")
    if filters and run_ids:  # only the runs of threads the auth's filter keeps (as LangGraph's server)
        run_ids = await runs.ids_on_visible_threads(state.db, run_ids, filters)
        if not run_ids:
            raise ApiError(404, "No runs found to cancel")
    for run_id in run_ids:
        await _cancel(state, str(run_id), action)
    return Response(status_code=204)


@api.get("/threads/{thread_id}/runs/{run_id}/join", "Join Run", response=_OUTPUT)
async def join(request: Request) -> Response:
    """Wait for the run to end; its output."""
    doc = await _found_run(request)
    result = await _final(state_of(request), doc)
    return json_response(result, headers=_locations(doc, False, "/join"))


@api.get(
    "/threads/{thread_id}/runs/{run_id}/stream", "Join Run Stream", query=RunJoinStreamQuery, stream=True
)
async def join_stream(request: Request, query: RunJoinStreamQuery) -> Response:
    """Follow the run's events (those after the ``Last-Event-ID`` header's)."""
    state = state_of(request)
    doc = await _found_run(request)
    last = request.headers.get("last-event-id") or "0"
    try:
        after = int(last.split("-")[0])
    except ValueError:
        raise ApiError(422, f"Last-Event-ID must be an event id this server sent, got {last!r}") from None
    modes = [m for m in query.stream_mode if m]
    cancel_on_disconnect = query.cancel_on_disconnect

    async def on_disconnect() -> None:
        await _cancel(state, doc["run_id"], "interrupt")

    events = _events(state, doc, after, modes, after == 0)  # from the start: its metadata event too
    return _sse(
        request, events, _locations(doc, False, "/stream"), on_disconnect if cancel_on_disconnect else None
    )


routes = [*api.routes(), *stateless.routes()]
