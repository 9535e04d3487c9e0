"""The thread event protocol's transports (langgraph-sdk 0.4's ``client.threads.stream``).

* ``POST /threads/{thread_id}/stream/events``: server-sent events of the thread's runs that the
  body's filter lets through (``channels``; ``namespaces``: prefixes; ``depth`` below them;
  ``since``: only events numbered above it). Each connection reads the thread's runs from the
  first one this server still has the events of, in order, then each new run, until the client
  leaves: its events are numbered from 1 (``seq``) the same way on every connection.
* ``POST /threads/{thread_id}/commands``: one command, its answer (:mod:`._thread_commands`).
* WebSocket ``/threads/{thread_id}/stream/events``: commands in, answers and events out; the
  connection's subscriptions (``subscription.subscribe`` / ``reconnect`` / ``unsubscribe``) say
  which events it gets (each event once); a new one gets the connection's earlier events again
  (``reconnect``: those after its ``since``).

How a run's log becomes events: :mod:`plait.server._protocol`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Annotated
from uuid import uuid4

from pydantic import Field, ValidationError
from sse_starlette.sse import EventSourceResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

from plait.server._api import Api, Body, check, explain
from plait.server._data import thread_runs
from plait.server._http import json_response
from plait.server._protocol import Filter, ProtocolEvent, RunEvents, check_channel
from plait.server._protocol_run import is_protocol_run
from plait.server._state import ServerState, state_of
from plait.server._stream import END
from plait.server._thread_commands import (
    Command,
    Refusal,
    answer,
    graph_name,
    params_of,
    run_command,
    success,
    visible_thread,
)
from plait.server._threads import found_thread
from plait.server._wire import ApiError, as_dict, check_uuid, dumps, loads

__all__ = ["EventStreamRequest", "ThreadFeed", "api", "routes"]

_log = logging.getLogger("plait.server")

api = Api("Thread Events", "The thread event protocol of langgraph-sdk's client.threads.stream.")

RECHECK = 1.0
"""Seconds between two looks at the thread's runs when nothing announced a change."""
KEPT = 10_000
"""Events a WebSocket connection keeps for the subscriptions made later (the oldest go first)."""

Channel = Annotated[str, check(check_channel)]


class EventStreamRequest(Body):
    """Which events of the thread a stream sends."""

    channels: Annotated[list[Channel], Field(min_length=1)]
    namespaces: list[list[str]] | None = None
    depth: Annotated[int, Field(ge=0)] | None = None
    since: Annotated[int, Field(ge=0, description="Only the events numbered above it.")] | None = None

    def filter(self) -> Filter:
        """The subscription it asks for."""
        namespaces = tuple(tuple(n) for n in self.namespaces) if self.namespaces else None
        return Filter(frozenset(self.channels), namespaces, self.depth)


class ThreadFeed:
    """One connection's view of a thread's runs: their protocol events, numbered (``seq``)."""

    def __init__(self, state: ServerState, thread_id: str) -> None:
        self.state, self.thread_id = state, thread_id
        self.seq = 0
        """The number of the last event given."""

    async def _next(self, done: set[str]) -> tuple[str, str] | None:
        """The thread's oldest run not read to its end, and its status."""
        rows = await thread_runs.in_order(self.state.db, self.thread_id)
        return next(((r["run_id"], r["status"]) for r in rows if r["run_id"] not in done), None)

    async def _reader(self, run_id: str) -> RunEvents | None:
        found = await thread_runs.document(self.state.db, run_id)
        if found is None:
            return None
        doc = loads(found)
        return RunEvents(run_id, graph_name(doc), is_protocol_run(doc))

    async def __aiter__(self) -> AsyncIterator[ProtocolEvent]:
        done: set[str] = set()
        begun: dict[str, tuple[RunEvents, int]] = {}
        """Runs being read: their reader and the last entry of their log read."""
        broker = self.state.broker
        while True:
            stir = broker.stir()  # taken first: a run starting during the look wakes the wait
            found = await self._next(done)
            if found is None:
                await _wait(stir)
                continue
            run_id, status = found
            if run_id not in begun:
                reader = await self._reader(run_id)
                if reader is None:  # deleted meanwhile
                    done.add(run_id)
                    continue
                begun[run_id] = (reader, 0)
            reader, after = begun[run_id]
            ended = False
            async for seq, name, data in broker.follow(run_id, after):
                after, ended = seq, name == END
                for event in reader.entry(seq, name, data):
                    self.seq += 1
                    event["seq"] = self.seq
                    yield event
                if ended:
                    break
            begun[run_id] = (reader, after)
            if ended or status not in ("pending", "running"):  # read to its end, or its log is gone
                done.add(run_id)
                del begun[run_id]
            else:  # its log is not here yet (a run queued before this server started)
                await _wait(stir)


async def _wait(stir: asyncio.Event) -> None:
    """Until ``stir`` is set (a run started or ended), or :data:`RECHECK` seconds passed."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stir.wait(), RECHECK)


def _sse(event: ProtocolEvent) -> dict[str, str]:
    return {"event": event["method"], "data": dumps(event).decode(), "id": str(event["seq"])}


async def _filtered(feed: ThreadFeed, subscription: Filter, since: int) -> AsyncIterator[dict[str, str]]:
    async for event in feed:
        if event["seq"] > since and subscription.matches(event):
            yield _sse(event)


@api.post(
    "/threads/{thread_id}/stream/events",
    "Stream Thread Events",
    body=EventStreamRequest,
    body_required=True,
    stream=True,
)
async def stream_events(request: Request, body: EventStreamRequest) -> Response:
    """The events of the thread's runs the body's filter lets through, until the client leaves."""
    thread = await found_thread(request)
    feed = ThreadFeed(state_of(request), thread["thread_id"])
    return EventSourceResponse(
        _filtered(feed, body.filter(), body.since or 0), headers={"Cache-Control": "no-store"}, ping=15
    )


@api.post("/threads/{thread_id}/commands", "Send Thread Command", body=Command, body_required=True)
async def command(request: Request, body: Command) -> Response:
    """One command of the protocol, and its answer."""
    try:
        result = await run_command(state_of(request), request.path_params["thread_id"], body, request)
    except Refusal as exc:
        reply = answer(body.id, exc)
        return json_response({**reply, "detail": exc.message} if exc.status != 200 else reply, exc.status)
    except ApiError as exc:
        return json_response({**answer(body.id, exc), "detail": exc.detail}, exc.status)
    return json_response(success(body.id, result))


class Resubscribe(EventStreamRequest):
    """``subscription.reconnect``'s params: a subscription again, with the events after ``since``."""

    since: Annotated[int, Field(ge=0)] | None = None
    """Required here (the command says so when it is missing)."""
    subscription_id: str | None = None


class Unsubscribe(Body):
    """``subscription.unsubscribe``'s params."""

    subscription_id: str


class _Socket:
    """One WebSocket connection: its subscriptions, the events it kept, its sends (one at a time)."""

    def __init__(self, websocket: WebSocket, state: ServerState, thread_id: str) -> None:
        self.websocket, self.state, self.thread_id = websocket, state, thread_id
        self.feed = ThreadFeed(state, thread_id)
        self.subscriptions: dict[str, Filter] = {}
        self.kept: deque[ProtocolEvent] = deque(maxlen=KEPT)
        self.lock = asyncio.Lock()

    async def send(self, message: dict[str, object]) -> None:
        async with self.lock:
            await self.websocket.send_text(dumps(message).decode())

    async def pump(self) -> None:
        """Send each event of the thread's runs that a subscription asks for."""
        async for event in self.feed:
            async with self.lock:
                self.kept.append(event)
                if any(f.matches(event) for f in self.subscriptions.values()):
                    await self.websocket.send_text(dumps(event).decode())

    async def subscribe(
        self, request: EventStreamRequest, subscription_id: str | None = None
    ) -> dict[str, object]:
        """Add a subscription; the connection's earlier events it asks for are sent first."""
        since = request.since or 0
        if self.kept and since + 1 < self.kept[0]["seq"] and self.kept[0]["seq"] > 1:
            raise Refusal("resume_gap", f"since={since}: the events up to {self.kept[0]['seq'] - 1} are gone")
        subscription, sub_id = request.filter(), subscription_id or str(uuid4())
        async with self.lock:
            replay = [e for e in self.kept if e["seq"] > since and subscription.matches(e)]
            for event in replay:
                await self.websocket.send_text(dumps(event).decode())
            self.subscriptions[sub_id] = subscription
        return {"subscription_id": sub_id, "replayed_events": len(replay)}

    async def run(self, command: Command) -> dict[str, object]:
        if command.method == "subscription.subscribe":
            return await self.subscribe(params_of(EventStreamRequest, command.params))
        if command.method == "subscription.reconnect":
            again: Resubscribe = params_of(Resubscribe, command.params)
            if again.since is None:
                raise Refusal("invalid_argument", "params.since: expected an integer >= 0, got nothing")
            return await self.subscribe(again, again.subscription_id)
        if command.method == "subscription.unsubscribe":
            sub_id = params_of(Unsubscribe, command.params).subscription_id
            if self.subscriptions.pop(sub_id, None) is None:
                raise Refusal("no_such_subscription", f"no subscription {sub_id} on this connection")
            return {}
        return await run_command(self.state, self.thread_id, command, self.websocket)

    async def handle(self, raw: str | bytes) -> None:
        """Answer one frame (a command)."""
        try:
            payload = loads(raw)
        except ValueError:
            await self.send(_invalid(None, "a frame is a JSON command: {id, method, params}"))
            return
        try:
            command = Command.model_validate(payload, strict=True)
        except ValidationError as exc:
            found = as_dict(payload).get("id")
            await self.send(
                _invalid(found if isinstance(found, int) else None, explain(exc.errors(), "the command"))
            )
            return
        try:
            await self.send(success(command.id, await self.run(command), self.feed.seq))
        except (Refusal, ApiError, HTTPException) as exc:
            await self.send(answer(command.id, exc))

    async def receive(self) -> None:
        """Answer the client's frames (text or binary) until it leaves."""
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text: str | None = message.get("text")
            await self.handle(text if text is not None else bytes(message.get("bytes") or b""))


def _invalid(command_id: int | None, message: str) -> dict[str, object]:
    return {"type": "error", "id": command_id, "error": "invalid_argument", "message": message}


async def _refuse(websocket: WebSocket, status: int, detail: str) -> None:
    """Refuse the handshake with ``status`` (a client that cannot read it sees close code 4000+status)."""
    try:
        await websocket.send_denial_response(json_response({"detail": detail}, status))
    except RuntimeError:  # the server cannot answer a handshake with a status
        await websocket.close(code=4000 + status, reason=detail[:120])


async def thread_socket(websocket: WebSocket) -> None:
    """WebSocket ``/threads/{thread_id}/stream/events``: commands in, answers and events out."""
    state: ServerState = websocket.app.state.server
    try:
        thread_id = check_uuid(websocket.path_params["thread_id"], "thread ID")
    except ApiError as exc:
        await _refuse(websocket, exc.status, exc.detail)
        return
    await websocket.accept()
    try:  # (after the handshake: a browser cannot read a refused one's status, the close code says it)
        await visible_thread(state, websocket, thread_id)
    except (ApiError, HTTPException) as exc:
        status, detail = (
            (exc.status, exc.detail) if isinstance(exc, ApiError) else (exc.status_code, exc.detail)
        )
        await websocket.close(code=4000 + status, reason=detail[:120])
        return
    socket = _Socket(websocket, state, thread_id)
    tasks = {asyncio.create_task(socket.pump()), asyncio.create_task(socket.receive())}
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if any(not t.cancelled() and t.exception() is not None for t in done):  # reading the runs failed
        _log.error("thread event stream of %s failed", thread_id, exc_info=next(iter(done)).exception())
        with contextlib.suppress(Exception):
            await websocket.close(code=1011)


routes = [*api.routes(), WebSocketRoute("/threads/{thread_id}/stream/events", thread_socket)]
