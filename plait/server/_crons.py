"""Crons: runs created on a schedule (``/runs/crons``), kept in ``plait_server_crons``, fired by the workers.

A cron stores the run request it makes (its ``payload``), a schedule in cron format, an optional
IANA time zone and end time. A thread's cron runs on that thread; a stateless cron makes a new
thread for each run, deleted once the run ends unless ``on_run_completed`` is ``"keep"``.
Every worker looks for due crons (:func:`fire_due`); on PostgreSQL a due cron is taken with
``FOR UPDATE SKIP LOCKED`` and moved to its next time in the same transaction, so one worker
fires it, once. A cron whose worker died between that commit and storing the run skips that
time (at most once, never twice).
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from plait.server._api import Api, validated
from plait.server._assistants import assistant_id_for
from plait.server._auth import authorize
from plait.server._auth_crons import cron_access, keep_creator, visible_crons
from plait.server._auth_filter import permits
from plait.server._auth_runs import fired_run_access
from plait.server._create import check_request, create_run
from plait.server._cron_models import (
    RUN_KEYS,
    Cron,
    CronCountRequest,
    CronCreate,
    CronPatch,
    CronSearch,
    when,
)
from plait.server._data import assistants, crons, threads
from plait.server._http import json_response, page_response, paged_response
from plait.server._records import CronDoc
from plait.server._run_models import RunCreate
from plait.server._state import ServerState, state_of
from plait.server._wire import ApiError, as_dict, as_str, check_uuid, now_iso, uuid7

__all__ = ["api", "fire_due", "routes"]

_log = logging.getLogger("plait.server")

BATCH = 20
"""Most due crons one worker takes at a time."""

api = Api("Crons", "A cron makes runs on a schedule: each on a new thread, or all on one thread.")


def next_time(cron: CronDoc, after: datetime) -> datetime | None:
    """The cron's first time strictly after ``after`` (UTC), or ``None`` past its end time."""
    tz = cron.get("timezone")
    base = after.astimezone(ZoneInfo(tz)) if tz else after.astimezone(timezone.utc)
    schedule = croniter(cron["schedule"], base)
    # types-croniter 6.2.4.20261122 leaves a parameter of get_next partly unknown
    found = schedule.get_next(datetime).astimezone(timezone.utc)  # pyright: ignore[reportUnknownMemberType]
    end = cron.get("end_time")
    if end is not None and found > when(end):
        return None
    return found


def _set_next(cron: CronDoc, after: datetime) -> float | None:
    """Store the cron's next run date in its document; that time (epoch seconds), or ``None``.

    Raises:
        ApiError: 422 when the schedule has no time after ``after`` (a date that never comes, or
            a year that has passed).
    """
    try:
        found = next_time(cron, after)
    except (CroniterBadDateError, OverflowError) as exc:
        raise ApiError(
            422, f"the schedule {cron['schedule']!r} has no time after {after.isoformat()}: {exc}"
        ) from None
    cron["next_run_date"] = None if found is None else found.isoformat()
    return None if found is None else found.timestamp()


def _payload(data: CronCreate | CronPatch, assistant_id: str) -> dict[str, object]:
    """The request as the cron keeps it (as LangGraph's server: the whole body, nulls left out),
    its assistant resolved."""
    return {**data.model_dump(exclude_none=True), "assistant_id": assistant_id}


def _with_cron_id(payload: dict[str, object], cron_id: str) -> dict[str, object]:
    """``payload`` whose ``config.configurable`` names the cron, as its runs' configs do."""
    config = as_dict(payload.get("config"))
    configurable = {**as_dict(config.get("configurable")), "cron_id": cron_id}
    return {**payload, "config": {**config, "configurable": configurable}}


def _run_request(payload: dict[str, object]) -> dict[str, object]:
    """The run request of a cron's ``payload`` (its schedule and other cron settings left out)."""
    return {k: v for k, v in payload.items() if k in RUN_KEYS or k == "assistant_id"}


@api.post("/runs/crons", "Create Cron", body=CronCreate, body_required=True, response=Cron)
@api.post(
    "/threads/{thread_id}/runs/crons",
    "Create Thread Cron",
    body=CronCreate,
    body_required=True,
    response=Cron,
)
async def create(request: Request, body: CronCreate) -> Response:
    """A cron of an assistant: each run on a new thread, or on the thread of the path."""
    state = state_of(request)
    raw_thread = request.path_params.get("thread_id")
    thread_id = None if raw_thread is None else check_uuid(raw_thread, "thread ID")
    raw_assistant = body.assistant_id
    assistant_id = assistant_id_for(raw_assistant, state)
    cron_id, now = uuid7(), now_iso()
    payload = _with_cron_id(_payload(body, assistant_id), cron_id)
    enabled = body.enabled
    cron: CronDoc = {
        "cron_id": cron_id,
        "assistant_id": assistant_id,
        "thread_id": thread_id,
        "on_run_completed": None if thread_id is not None else body.on_run_completed or "delete",
        "end_time": body.end_time,
        "schedule": body.schedule,
        "timezone": body.timezone,
        "created_at": now,
        "updated_at": now,
        "payload": payload,
        "user_id": None,  # (without custom auth: no user; LangGraph's dev server shows "")
        "next_run_date": None,
        "metadata": body.metadata or {},
        "enabled": True if enabled is None else enabled,
    }
    seen = await cron_access(request, cron)
    due = _set_next(cron, datetime.now(timezone.utc))
    await _check_run(state, cron)
    dialect = state.db.dialect
    async with (
        state.db.tx() as tx
    ):  # its thread and assistant are not deleted meanwhile (their crons go with them)
        found = await assistants.get_shared(tx, dialect, assistant_id)
        if found is None or not seen.assistant(found):
            raise ApiError(404, f"Assistant '{raw_assistant}' not found")
        if thread_id is not None:
            thread = await threads.get_shared(tx, dialect, thread_id)
            if thread is None or not seen.thread(thread):
                raise ApiError(404, f"Thread with ID '{thread_id}' not found")
        await crons.write(tx, cron, due, insert=True)
    if state.worker is not None:
        state.worker.wake_crons()
    return json_response(cron)


async def _check_run(state: ServerState, cron: CronDoc, webhook: bool = True) -> None:
    """Refuse (422) a cron whose runs would be refused for their options (``webhook``: or for an
    unreachable webhook)."""
    run = validated(RunCreate, _run_request(cron["payload"]), "the cron's run request")
    check_request(state, cron["thread_id"], run)
    if webhook and run.webhook:
        await state.hooks.reachable(run.webhook)


async def _found(request: Request, action: str = "read") -> CronDoc:
    """The cron of the path, once the auth allows ``action`` (404: none, or the auth's filter hides it)."""
    cron_id = check_uuid(request.path_params["cron_id"], "cron ID")
    filters = await authorize(request, "crons", action, {"cron_id": cron_id})
    cron = await crons.get(state_of(request).db, cron_id)
    if cron is None or not permits(filters, cron.get("metadata")):
        raise ApiError(404, f"Cron with ID '{cron_id}' not found")
    return cron


@api.get("/runs/crons/{cron_id}", "Get Cron", response=Cron)
async def get(request: Request) -> Response:
    """The cron."""
    return json_response(await _found(request))


@api.patch("/runs/crons/{cron_id}", "Update Cron", body=CronPatch, body_required=True, response=Cron)
async def patch(request: Request, body: CronPatch) -> Response:
    """As LangGraph's server: the body is merged into the cron's
    ``payload``; ``metadata`` into its metadata; a new schedule, time zone or end time moves its
    next run (re-enabling a cron whose time passed meanwhile runs it at once).

    The cron is read and written in one transaction, its row locked: a worker firing it meanwhile
    waits (or skips it), so an update never puts back a time that was already run.
    """
    state = state_of(request)
    given = body.model_fields_set
    if not given:
        raise ApiError(400, "Request body cannot be empty")
    cron_id = check_uuid(request.path_params["cron_id"], "cron ID")
    if "schedule" in given and body.schedule is None:
        raise ApiError(422, "schedule: a cron needs a schedule; null cannot clear it")
    if body.webhook:  # (looked up before the cron's row is locked)
        await state.hooks.reachable(state.hooks.checked(body.webhook))
    data = body.model_dump(exclude_unset=True)
    value: dict[str, object] = {"cron_id": cron_id, "payload": data, "schedule": body.schedule}
    filters = await authorize(request, "crons", "update", value)
    async with state.db.tx() as tx:
        cron = await crons.get_locked(tx, state.db.dialect, cron_id)
        if cron is None or not permits(filters, cron.get("metadata")):
            raise ApiError(404, f"Cron '{cron_id}' not found")
        kept = {k: v for k, v in cron["payload"].items() if k not in data}  # (a null clears a key)
        payload = _with_cron_id({**kept, **_payload(body, cron["assistant_id"])}, cron_id)
        payload = keep_creator(cron, payload)  # (its runs stay its creator's, whatever the config says)
        moved = _settings(cron, body)
        cron["metadata"] = {**cron["metadata"], **(body.metadata or {})}
        cron["payload"], cron["updated_at"] = payload, now_iso()
        due = _set_next(cron, datetime.now(timezone.utc)) if moved else _due(cron)
        await _check_run(state, cron, webhook=False)
        await crons.write(tx, cron, due, insert=False)
    if state.worker is not None:
        state.worker.wake_crons()
    return json_response(cron)


def _settings(cron: CronDoc, data: CronPatch) -> bool:
    """Apply the cron's own settings in ``data``; whether its next run has to be found again."""
    given = data.model_fields_set
    if "schedule" in given and data.schedule is not None:  # (refused as null by the route)
        cron["schedule"] = data.schedule
    if "timezone" in given:  # (a null time zone or end time clears it)
        cron["timezone"] = data.timezone
    if "end_time" in given:
        cron["end_time"] = data.end_time
    if data.enabled is not None:
        cron["enabled"] = data.enabled
    on_completed = data.on_run_completed
    if on_completed is not None and cron["thread_id"] is None:  # (a thread's cron: nothing to delete)
        cron["on_run_completed"] = on_completed
    return bool(given & {"schedule", "timezone", "end_time"})


def _due(cron: CronDoc) -> float | None:
    """The cron's stored next run (epoch seconds)."""
    found = cron["next_run_date"]
    return None if found is None else when(found).timestamp()


@api.delete("/runs/crons/{cron_id}", "Delete Cron", status=204)
async def delete(request: Request) -> Response:
    """Delete the cron."""
    cron = await _found(request, "delete")
    await crons.delete(state_of(request).db, cron["cron_id"])
    return Response(status_code=204)


async def _query(request: Request, wanted: CronCountRequest) -> crons.CronQuery:
    """The crons the search's filters select (and the auth lets the user see)."""
    state = state_of(request)
    data = wanted.model_dump()  # (as the auth is asked)
    raw_assistant = wanted.assistant_id
    assistant_id = None if raw_assistant is None else assistant_id_for(raw_assistant, state)
    visible = await visible_crons(request, wanted.thread_id, data)
    metadata = wanted.metadata or {}
    return crons.CronQuery(assistant_id, wanted.thread_id, wanted.enabled, metadata, visible)


@api.post("/runs/crons/search", "Search Crons", body=CronSearch, response=list[Cron])
async def search(request: Request, body: CronSearch) -> Response:
    """Crons by assistant, thread, enabled and metadata; sorted and paged (``X-Pagination-Total``)."""
    query = await _query(request, body)
    db = state_of(request).db
    sort_by, order = body.sort_by or "created_at", body.sort_order or "desc"
    select: list[str] = list(body.select or [])
    if sort_by in crons.COLUMN_SORTS:  # (sorted and paged by the database)
        page, total = await crons.search(db, query, sort_by, order, body.limit, body.offset)
        return paged_response(page, total, body.offset, body.limit, select)
    found, _ = await crons.search(db, query, None, order, None, 0)

    def key(cron: CronDoc) -> tuple[bool, datetime | str]:
        value = cron.get(sort_by)
        if value is None:
            return False, ""
        return True, when(as_str(value))  # (an end time keeps the offset it was given with)

    found.sort(key=key, reverse=order == "desc")
    return page_response(found, body.offset, body.limit, select)


@api.post("/runs/crons/count", "Count Crons", body=CronCountRequest, response=int)
async def count(request: Request, body: CronCountRequest) -> Response:
    """How many crons the filters select."""
    return json_response(await crons.count(state_of(request).db, await _query(request, body)))


# -- firing -------------------------------------------------------------------------------


async def _take_due(state: ServerState, now: datetime) -> list[CronDoc]:
    """The crons due at ``now``, each moved on to its next time (in one transaction)."""
    taken: list[CronDoc] = []
    async with state.db.tx() as tx:
        for cron in await crons.due(tx, state.db.dialect, now.timestamp(), BATCH):
            fired = cron.copy()
            try:
                due = _set_next(cron, now)
            except ApiError as exc:  # its schedule ran out (a year that passed): it has no next time
                _log.warning("cron %s fires no more: %s", cron["cron_id"], exc.detail)
                cron["next_run_date"], due = None, None
            await crons.write(tx, cron, due, insert=False)
            taken.append(fired)
    return taken


async def _next_due(state: ServerState) -> float | None:
    return await crons.next_due(state.db)


async def fire_due(state: ServerState) -> float | None:
    """Create the runs of the crons due now; when the next cron is due (epoch seconds), if any."""
    now = datetime.now(timezone.utc)
    due = await _next_due(state)
    if due is None or due > now.timestamp():
        return due
    while True:
        taken = await _take_due(state, now)
        for cron in taken:
            await _fire(state, cron)
        if len(taken) < BATCH:
            return await _next_due(state)


async def _fire(state: ServerState, cron: CronDoc) -> None:
    """One run of ``cron`` (a failure is logged: the cron fires again at its next time)."""
    data = _run_request(cron["payload"])
    data["metadata"] = {**cron["metadata"], **as_dict(data.get("metadata"))}
    if cron["thread_id"] is None:
        data["on_completion"] = cron["on_run_completed"] or "delete"
    try:
        access = await fired_run_access(state.auth, cron, data)  # (as the cron's creator)
        request = validated(RunCreate, data, "the cron's run request")
        await create_run(state, cron["thread_id"], request, access=access)
    except (ApiError, HTTPException) as exc:
        _log.warning("cron %s could not start its run: %s", cron["cron_id"], exc.detail)
    except Exception:  # noqa: BLE001 - the next due cron still fires
        _log.exception("cron %s could not start its run", cron["cron_id"])


routes = api.routes()
