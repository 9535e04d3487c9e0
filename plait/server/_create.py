"""Creating a run: check the request, apply the thread's multitask strategy, queue it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from plait.server._assistants import assistant_id_for
from plait.server._auth_runs import RunAccess
from plait.server._data import assistants, runs
from plait.server._db import Database, Row, Tx
from plait.server._execute import merged_config
from plait.server._records import AssistantDoc, RunDoc, RunKwargs, ThreadDoc
from plait.server._run_models import RunCreate, StreamMode
from plait.server._state import ServerState
from plait.server._threads import create_thread
from plait.server._ttl import ThreadTtl, thread_ttl
from plait.server._webhook import WebhookPolicy
from plait.server._wire import ApiError, as_dict, check_uuid, dumps, loads, now_iso, uuid7

__all__ = ["check_request", "create_run", "run_json"]


def _stream_modes(raw: StreamMode | list[StreamMode] | None) -> list[str]:
    return ["values"] if raw is None else [raw] if isinstance(raw, str) else list(raw)


def _kwargs(data: RunCreate, temporary: bool, hooks: WebhookPolicy) -> RunKwargs:
    """The run's ``kwargs`` (as its document shows them) from its request (checked by its model)."""
    kwargs: RunKwargs = {
        "input": data.input,
        "command": None if data.command is None else data.command.model_dump(exclude_unset=True),
        "config": data.config or {},
        "context": data.context or {},
        "stream_mode": _stream_modes(data.stream_mode),
        "interrupt_before": data.interrupt_before,
        "interrupt_after": data.interrupt_after,
        "temporary": temporary,
        "subgraphs": bool(data.stream_subgraphs),
        "resumable": bool(data.stream_resumable),
        "durability": _durability(data),
        # as LangGraph's server lists them (feedback keys are LangSmith's)
        "checkpoint_during": True if data.checkpoint_during is None else data.checkpoint_during,
        "feedback_keys": data.feedback_keys,
        "webhook": hooks.checked(data.webhook) if data.webhook else None,
    }
    checkpoint_id = data.checkpoint_id or (data.checkpoint and data.checkpoint.checkpoint_id)
    if checkpoint_id:  # (read by plait's execution; LangGraph's server lists no such key)
        kwargs["checkpoint_id"] = checkpoint_id
    if data.strict_resume:  # a resume answering no pending interrupt fails the run
        kwargs["strict_resume"] = True
    return kwargs


def _durability(data: RunCreate) -> str:
    """The run's ``durability``; without one, ``checkpoint_during=False`` means ``"exit"`` (as LangGraph)."""
    if data.durability is None:
        return "async" if data.checkpoint_during in (None, True) else "exit"
    return data.durability


def run_json(row: Row) -> RunDoc:
    """A run row as the API shows it."""
    doc: RunDoc = loads(row["doc"])
    doc["status"], doc["updated_at"] = row["status"], row["updated_at"]
    return doc


async def _new_thread(tx: Tx, thread_id: str, data: RunCreate, ttl: ThreadTtl | None) -> ThreadDoc:
    """The thread a run names does not exist: create it, or refuse (``if_not_exists``)."""
    if (data.if_not_exists or "reject") == "reject":
        raise ApiError(404, f"Thread {thread_id} not found (pass if_not_exists='create' to create it)")
    return await create_thread(tx, thread_id, dict(data.metadata or {}), ttl)  # (as LangGraph)


async def _apply_strategy(
    state: ServerState, tx: Tx, thread_id: str, strategy: str
) -> tuple[list[tuple[str, str]], bool]:
    """Deal with the thread's pending/running runs: what to do after commit (the running ones to
    cancel; the pending ones removed, ``"unrun"``: their followers get their end), and whether the
    new run has to wait for others."""
    inflight = await runs.inflight(tx, thread_id)
    if not inflight or strategy == "enqueue":
        return [], bool(inflight)
    if strategy == "reject":
        raise ApiError(
            409, f"Thread {thread_id} is busy with run {inflight[0]['run_id']} (multitask_strategy='reject')"
        )
    to_cancel: list[tuple[str, str]] = []
    for row in inflight:
        if row["status"] == "pending":
            if strategy == "rollback":
                await runs.delete(tx, row["run_id"])
            else:
                await runs.mark_interrupted(tx, row["run_id"])
            to_cancel.append((row["run_id"], "unrun"))
        else:
            to_cancel.append((row["run_id"], strategy))
    return to_cancel, any(action != "unrun" for _, action in to_cancel)


async def _store(  # noqa: PLR0913 - the parts of a new run
    state: ServerState,
    db: Database | Tx,
    doc: RunDoc,
    thread_doc: str | None,
    reserved: bool,
    behind: bool = False,
    check: bool = False,
    not_before: float | None = None,
) -> tuple[str, bool, bool]:
    """Insert the run and write its thread's document (``thread_doc``).

    The run is stored as running by this worker when it ``reserved`` a slot and the run is not
    ``behind`` others of its thread (with ``check``, that is checked here too: on PostgreSQL in
    the same statement), else as pending. Its stored document, whether it starts here, and
    whether it waits in the queue for a slot only (a worker may claim it now). A run kept
    pending until ``not_before`` (``time.time()`` seconds) holds it in ``lease_until``.
    """
    text = dumps(doc).decode()
    lease = time.time() + state.settings.lease_ttl
    run = runs.NewRun(doc, text, thread_doc, state.worker_id, lease, not_before)
    start, claimable = await runs.insert(db, state.db.dialect, run, reserved, behind, check)
    return text, start, claimable


async def cancel_running(state: ServerState, run_id: str, action: str) -> None:
    """Cancel a running run wherever it executes."""
    if state.worker is not None and state.worker.cancel_local(run_id, action):
        return
    await state.db.notify("plait_server_cancel", f"{run_id}:{action}")


@dataclass
class _Request:
    """A run request, checked (``invalid``: the error to report once its assistant is found)."""

    data: RunCreate
    thread_id: str | None
    assistant: str
    """The assistant's id (``data.assistant_id`` names it, or its graph)."""
    strategy: str = "enqueue"
    temporary: bool = True
    kwargs: RunKwargs = field(default_factory=lambda: RunKwargs())
    invalid: ApiError | None = None
    delay: float = 0.0
    """``after_seconds``: the run waits in the queue that long before a worker may take it."""
    access: RunAccess | None = None
    """What the config's auth lets the run's user see (``None``: no custom auth)."""

    def doc(self, assistant: AssistantDoc) -> RunDoc:
        """The new run's API document (pending)."""
        metadata = self.data.metadata or {}
        now = now_iso()
        return {
            "run_id": uuid7(),
            "thread_id": self.thread_id or uuid7(),
            "assistant_id": assistant["assistant_id"],
            "metadata": {
                **assistant.get("metadata", {}),
                **metadata,
                "assistant_id": assistant["assistant_id"],
            },
            "status": "pending",
            "kwargs": self.kwargs,
            "multitask_strategy": self.strategy,
            "created_at": now,
            "updated_at": now,
        }

    def found(self, assistant: str | AssistantDoc | None) -> AssistantDoc:
        """The assistant (its document or JSON), or 404; then the request's own error, if any."""
        found: AssistantDoc | None = loads(assistant) if isinstance(assistant, str) else assistant
        if found is None or (self.access is not None and not self.access.assistant_ok(found)):
            raise ApiError(404, f"Assistant {self.data.assistant_id} not found")
        if self.invalid is not None:
            raise self.invalid
        return found


def _request(state: ServerState, thread_id: str | None, data: RunCreate, wait: bool) -> _Request:
    req = _Request(data, thread_id, assistant_id_for(data.assistant_id, state))
    req.strategy = data.multitask_strategy or "enqueue"
    try:
        req.temporary = thread_id is None and (data.on_completion or "delete") == "delete"
        req.kwargs = _kwargs(data, req.temporary, state.hooks)
        req.delay = float(data.after_seconds or 0)
        if wait:
            req.kwargs["wait"] = True
    except ApiError as exc:  # reported after an unknown assistant (see _Request.found)
        req.invalid, req.temporary = exc, True
    return req


def check_request(state: ServerState, thread_id: str | None, data: RunCreate) -> None:
    """Refuse (422) a run request that :func:`create_run` would refuse for its options."""
    invalid = _request(state, thread_id, data, False).invalid
    if invalid is not None:
        raise invalid


async def _on_thread(
    state: ServerState, tx: Tx, req: _Request
) -> tuple[AssistantDoc, RunDoc, str, list[tuple[str, str]], bool]:
    """Read the assistant and lock the run's thread (one statement), apply the multitask
    strategy and merge the run into the thread's metadata.

    The assistant, the run's document, the thread's new document, the running runs to cancel
    after commit, and whether the run has to wait for others (``None``: not checked yet, the
    strategy is ``enqueue``: :func:`_store` checks it).
    """
    row = await runs.read_for_run(tx, state.db.dialect, req.assistant, req.thread_id)
    assistant = req.found(row["assistant"])
    doc = req.doc(assistant)
    thread_id = check_uuid(doc["thread_id"], "thread ID")
    ttl = thread_ttl(None, state.settings.thread_ttl)  # a thread a run makes has the config's ttl
    if row["thread"]:
        thread = loads(row["thread"])
        if req.access is not None and not req.access.thread_ok(thread):  # another user's (as LangGraph)
            raise ApiError(404, f"Thread {thread_id} not found")
    elif req.thread_id is None:  # a stateless run whose thread is kept (on_completion="keep")
        thread = await create_thread(tx, thread_id, dict(req.data.metadata or {}), ttl)
    else:
        thread = await _new_thread(tx, thread_id, req.data, ttl)
    to_cancel: list[tuple[str, str]] = []
    busy = False
    if req.strategy != "enqueue":
        to_cancel, busy = await _apply_strategy(state, tx, thread_id, req.strategy)
    own = thread["metadata"]
    thread["metadata"] = {**own, "graph_id": assistant["graph_id"], "assistant_id": assistant["assistant_id"]}
    # (as LangGraph's server: a stateless run's new thread lends the run only the metadata it was made with)
    doc["metadata"] = {**(own if req.thread_id is None else thread["metadata"]), **doc["metadata"]}
    # as LangGraph: an idle thread takes the assistant's, its own and the run's config (the status
    # column, not the document's copy: runs' ends update only the column)
    if row["status"] != "busy":
        base, own = as_dict(assistant.get("config")), as_dict(thread.get("config"))
        configurable = {**as_dict(base.get("configurable")), **as_dict(own.get("configurable"))}
        thread["config"] = {**base, **own, **as_dict(req.kwargs.get("config")), "configurable": configurable}
    thread_doc = dumps({k: v for k, v in thread.items() if k != "values"}).decode()
    return assistant, doc, thread_doc, to_cancel, busy


@dataclass
class _Stored:
    """A run just stored: its assistant, document and stored JSON, whether it starts here, whether
    a worker may claim it now (else it waits behind runs of its thread), the runs to cancel."""

    assistant: AssistantDoc
    doc: RunDoc
    text: str
    start: bool
    claimable: bool
    to_cancel: list[tuple[str, str]]


def _show_config(doc: RunDoc, assistant: AssistantDoc) -> None:
    """The run's ``kwargs.config`` as LangGraph's server lists it: the assistant's config, the
    run's, the ids in ``configurable`` and the run's metadata (execution merges them again)."""
    doc["kwargs"]["config"] = {**merged_config(doc, assistant), "metadata": doc["metadata"]}


def _not_before(req: _Request) -> float | None:
    return time.time() + req.delay if req.delay else None


async def _write(
    state: ServerState, req: _Request, assistant: AssistantDoc | None, reserved: bool, watch: bool
) -> _Stored:
    """Store the run (``reserved``: it may start in this worker).

    ``watch``: the run's events are followed next; when it does not start here, the follower
    is registered before the commit, so it misses none of them (see ``Broker.watch``).
    """
    to_cancel: list[tuple[str, str]] = []
    doc: RunDoc | None = None
    try:
        # (a stateless run's assistant is read before; a thread's run reads it with its thread)
        if req.temporary and assistant is not None and state.db.dialect == "postgres":
            # one statement, its own transaction
            doc = req.doc(assistant)
            _show_config(doc, assistant)
            if watch and not reserved:
                state.broker.watch(doc["run_id"])
            text, start, claimable = await _store(
                state, state.db, doc, None, reserved, not_before=_not_before(req)
            )
            return _Stored(assistant, doc, text, start, claimable, to_cancel)
        async with state.db.tx() as tx:
            thread_doc, busy = None, False
            if req.temporary and assistant is not None:
                doc = req.doc(assistant)
            else:
                assistant, doc, thread_doc, to_cancel, busy = await _on_thread(state, tx, req)
            _show_config(doc, assistant)
            check = not req.temporary and req.strategy == "enqueue"
            text, start, claimable = await _store(
                state, tx, doc, thread_doc, reserved, busy, check, _not_before(req)
            )
            if watch and not start:
                state.broker.watch(doc["run_id"])
    except BaseException:
        if doc is not None:
            state.broker.unwatch(doc["run_id"])
        raise
    return _Stored(assistant, doc, text, start, claimable, to_cancel)


async def create_run(
    state: ServerState,
    thread_id: str | None,
    data: RunCreate,
    *,
    wait: bool = False,
    follow: bool = False,
    access: RunAccess | None = None,
) -> RunDoc:
    """Queue a run on ``thread_id`` (``None``: a stateless run); its API document.

    ``wait``: the client waits for the outcome only (``runs.wait``): the run publishes no other events.
    ``follow``: the caller follows the run's events next (``runs.stream``; implied by ``wait``).
    A run that can start at once, in a worker with a free slot, is stored as running by this
    process and starts here, without going through the queue. ``access``: what the config's auth
    lets the run's user see (:func:`plait.server._auth_runs.run_access`; another user's thread or
    assistant is a 404).
    """
    req = _request(state, thread_id, data, wait)
    req.access = access
    if req.invalid is None and (url := req.kwargs.get("webhook")):
        await state.hooks.reachable(url)
    assistant: AssistantDoc | None = None
    if req.temporary:  # (a thread's run reads its assistant with its thread)
        assistant = req.found(await assistants.get(state.db, req.assistant))
    worker = state.worker
    reserved = worker is not None and not req.delay and worker.reserve()
    try:
        run = await _write(state, req, assistant, reserved, wait or follow)
    except BaseException:
        if reserved and worker is not None:
            worker.release()
        raise
    if reserved and not run.start and worker is not None:
        worker.release()
    for cancel_id, action in run.to_cancel:
        if action == "unrun":  # a pending run the strategy removed
            await state.broker.end_unrun(cancel_id, "interrupted")
        else:
            await cancel_running(state, cancel_id, action)
    run_id = run.doc["run_id"]
    if run.start and worker is not None:
        state.broker.open(run_id)
        row = {"run_id": run_id, "thread_id": run.doc["thread_id"], "assistant_id": run.doc["assistant_id"]}
        worker.take({**row, "attempt": 1, "doc": run.text}, run.assistant)
        return run.doc
    if not state.broker.shared:
        state.broker.open(run_id)
    if worker is not None and run.claimable:  # (a run behind others is woken by their end)
        worker.wake()
        if req.delay:  # (other workers find it by polling)
            asyncio.get_running_loop().call_later(req.delay, worker.wake)
    return run.doc
