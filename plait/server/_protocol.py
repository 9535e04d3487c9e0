"""The thread event protocol of langgraph-sdk 0.4: a run's log as protocol events, and filters.

:class:`RunEvents` reads one run's log (see :mod:`plait.server._stream`) and gives the events
LangGraph's server sends for it (``{"type": "event", "event_id", "seq", "method", "params":
{"namespace", "timestamp", "data"}}``): the root graph's lifecycle (``running``, then ``completed``,
``failed`` or ``interrupted``) is the server's own; an interrupt is an ``input.requested`` event
(``{"interrupt_id", "payload"}``) followed by the root's ``interrupted``; subgraphs' lifecycle
events come from the run (each ``started`` once), and those still open when the run ends are
``completed`` before the root. Runs made by protocol commands log v3 events
(:mod:`plait.server._protocol_run`); the other runs of the thread are read from the stream modes
they logged (``values``, ``updates``, ``custom``, ``tasks``).

``event_id`` is stable (a run's id and its log's numbering: a client that reconnects drops the
events it had); ``seq`` numbers one connection's events (the caller sets it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import NotRequired, TypedDict

from plait.server._stream import END
from plait.server._wire import as_dict, as_list, loads

__all__ = ["CHANNELS", "EventParams", "Filter", "ProtocolEvent", "RunEvents", "check_channel", "is_prefix"]

CHANNELS = ("values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks", "custom")
"""The channels a subscription names (and ``custom:<name>``: the ``custom`` events of that name)."""

_TERMINAL = {"success": "completed", "interrupted": "interrupted"}
"""A run's status -> the root's last lifecycle status (any other: ``failed``)."""
_STATUSES = ("running", "completed", "failed", "interrupted")


def check_channel(name: str) -> str:
    """``name`` if it is a channel.

    Raises:
        ValueError: it is not one (the message lists them).
    """
    if name in CHANNELS or (name.startswith("custom:") and len(name) > len("custom:")):
        return name
    raise ValueError(f"{name!r} is not a channel; choose from {', '.join(CHANNELS)} or custom:<name>")


def _segment(segment: str) -> str:
    return segment.partition(":")[0]


def is_prefix(namespace: list[str], prefix: list[str] | tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts with ``prefix``; a prefix segment without ``:`` also matches a
    segment that has one (``agent`` matches ``agent:<task id>``)."""
    if len(prefix) > len(namespace):
        return False
    for want, got in zip(prefix, namespace, strict=False):
        if got != want and (":" in want or _segment(got) != want):
            return False
    return True


class EventParams(TypedDict):
    """An event's ``params``: where in the run it happened, when (epoch ms), what."""

    namespace: list[str]
    timestamp: int
    data: object
    node: NotRequired[str]


class ProtocolEvent(TypedDict):
    """One event of the thread event protocol (``seq``: its number on the connection)."""

    type: str
    event_id: str
    seq: int
    method: str
    params: EventParams


@dataclass(frozen=True)
class Filter:
    """What a subscription receives: its channels, the namespaces (prefixes; ``None``: all) and the
    depth below them (``None``: any)."""

    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None

    def matches(self, event: ProtocolEvent) -> bool:
        """Whether ``event`` is one of this subscription's."""
        method, params = event["method"], event["params"]
        if method == "custom":
            name = as_dict(params.get("data")).get("name")
            if "custom" not in self.channels and not (name and f"custom:{name}" in self.channels):
                return False
        elif ("input" if method == "input.requested" else method) not in self.channels:
            return False
        if not self.namespaces:
            return True
        namespace = params["namespace"]
        return any(
            is_prefix(namespace, prefix)
            and (self.depth is None or len(namespace) - len(prefix) <= self.depth)
            for prefix in self.namespaces
        )


def _key(namespace: list[str]) -> str:
    return "|".join(namespace)


def _now() -> int:
    return int(time.time() * 1000)


def _event(
    method: str, namespace: list[str], data: Any, event_id: str, timestamp: int | None = None
) -> ProtocolEvent:
    params: EventParams = {"namespace": namespace, "timestamp": timestamp or _now(), "data": data}
    return {"type": "event", "event_id": event_id, "seq": 0, "method": method, "params": params}


@dataclass
class _Space:
    """A namespace of the run: its status and graph's name."""

    namespace: list[str]
    status: str
    graph_name: str


@dataclass
class RunEvents:
    """The protocol events of one run, from its log entries in order (see the module's docstring)."""

    run_id: str
    graph_name: str
    """The root graph's name (the run's graph id)."""
    protocol: bool
    """Whether the run logged v3 events (made by a protocol command)."""
    spaces: dict[str, _Space] = field(default_factory=lambda: {})
    pending: dict[str, list[str]] = field(default_factory=lambda: {})
    """Interrupts asked for (id -> namespace)."""
    started: bool = False
    ended: bool = False
    _announced: set[str] = field(default_factory=lambda: set[str]())
    _base: str = ""
    _count: int = 0

    def entry(self, seq: int, name: str, raw: bytes) -> list[ProtocolEvent]:
        """The events of the log's entry ``seq`` (``name``: its event name, ``raw``: its JSON data)."""
        if name == END:
            return self._end(as_dict(loads(raw)))
        method, *namespace = name.split("|")
        self._base, self._count = f"{self.run_id}.{seq}", 0
        out = self._start()
        data = loads(raw)
        if self.protocol:
            params = as_dict(data)
            found = params.get("namespace")
            if isinstance(found, list):
                namespace = [str(s) for s in as_list(found)]
            out += self._protocol(method, namespace, params)
        else:
            out += self._plain(method, namespace, data)
        return out

    def _id(self) -> str:
        """The next event id of the entry read (its first event: the entry's own)."""
        n, self._count = self._count, self._count + 1
        return self._base if n == 0 else f"{self._base}.{n}"

    def _start(self) -> list[ProtocolEvent]:
        if self.started:
            return []
        self.started = True
        return self._status([], "running", self.graph_name)

    def _protocol(self, method: str, namespace: list[str], params: dict[str, object]) -> list[ProtocolEvent]:
        data, stamp = params.get("data"), params.get("timestamp")
        timestamp = stamp if isinstance(stamp, int) else None
        if method == "lifecycle":
            return self._lifecycle(namespace, as_dict(data), timestamp)
        self._register(namespace)
        if method == "values":
            return self._values(namespace, data, as_list(params.get("interrupts")), timestamp)
        if method.startswith("custom:"):
            return [_event("custom", namespace, {"name": method[7:], "payload": data}, self._id(), timestamp)]
        if method == "custom":
            return [_event("custom", namespace, {"payload": data}, self._id(), timestamp)]
        if method not in CHANNELS or (
            method == "messages" and not isinstance(as_dict(data).get("event"), str)
        ):
            return []  # (debug, ...: no channel carries them; messages are content-block events only)
        event = _event(method, namespace, data, self._id(), timestamp)
        if method == "tools" and isinstance(data, dict):
            node = as_dict(data).pop("__node", None)
            if isinstance(node, str) and node:
                event["params"]["node"] = node
        return [event]

    def _plain(self, method: str, namespace: list[str], data: Any) -> list[ProtocolEvent]:
        """A log entry of a run made by the other routes (``runs.stream`` and co.)."""
        self._register(namespace)
        if method == "values":
            return self._values(namespace, data, [], None)
        if method == "updates":
            return self._update(namespace, data)
        if method == "custom":
            return [_event("custom", namespace, {"payload": data}, self._id())]
        if method == "tasks":
            return [_event("tasks", namespace, data, self._id())]
        return []  # (messages/*, debug, events: not in the protocol's shape)

    def _update(self, namespace: list[str], data: Any) -> list[ProtocolEvent]:
        update = as_dict(data)
        if len(update) != 1:
            return [_event("updates", namespace, {"values": update}, self._id())]
        node, values = next(iter(update.items()))
        if node == "__interrupt__":
            return self._asked(namespace, _requests(values))
        event = _event(
            "updates", namespace, values if isinstance(values, dict) else {"value": values}, self._id()
        )
        event["params"]["node"] = node
        return [event]

    def _values(
        self, namespace: list[str], data: Any, interrupts: list[object], timestamp: int | None
    ) -> list[ProtocolEvent]:
        out = self._asked(namespace, _requests(interrupts))
        if isinstance(data, dict):
            values = as_dict(data)
            out += self._asked(namespace, _requests(values.get("__interrupt__")))
            data = {k: v for k, v in values.items() if k != "__interrupt__"}
            if not data:
                return out
        return [*out, _event("values", namespace, data, self._id(), timestamp)]

    def _asked(self, namespace: list[str], requests: list[_Request]) -> list[ProtocolEvent]:
        """``input.requested`` for each new interrupt; then the root is ``interrupted``."""
        out: list[ProtocolEvent] = []
        for request in requests:
            interrupt_id = request["interrupt_id"]
            if interrupt_id in self.pending:
                continue
            self.pending[interrupt_id] = namespace
            event_id = f"{self.run_id}:input:{_key(namespace)}:{interrupt_id}"
            out.append(_event("input.requested", namespace, request, event_id))
        if out:
            out += self._status([], "interrupted", self.graph_name)
            self.ended = True
        return out

    def _lifecycle(
        self, namespace: list[str], data: dict[str, object], timestamp: int | None
    ) -> list[ProtocolEvent]:
        inner = data.get("namespace")
        if isinstance(inner, list) and len(as_list(inner)) > len(namespace):
            namespace = [str(s) for s in as_list(inner)]
        status = data.get("event")
        if not namespace or not isinstance(status, str):
            return []  # the root's lifecycle is the server's own
        name = data.get("graph_name")
        if status == "started":
            key = _key(namespace)
            if key in self._announced:
                return []
            self._announced.add(key)
            self._register(namespace, str(name) if isinstance(name, str) else None)
            return [_event("lifecycle", namespace, data, self._id(), timestamp)]
        status = status if status in _STATUSES else "interrupted"  # (plait's "drained": stopped early)
        extra = {k: data[k] for k in ("error", "cause") if data.get(k)}
        return self._status(namespace, status, name if isinstance(name, str) else None, extra)

    def _register(self, namespace: list[str], graph_name: str | None = None) -> None:
        for n in range(1, len(namespace) + 1):
            part = namespace[:n]
            key = _key(part)
            if key not in self.spaces:
                self.spaces[key] = _Space(
                    part, "started", graph_name if n == len(namespace) and graph_name else _segment(part[-1])
                )

    def _status(
        self,
        namespace: list[str],
        status: str,
        graph_name: str | None,
        extra: dict[str, object] | None = None,
    ) -> list[ProtocolEvent]:
        """``lifecycle`` ``status`` of a namespace, unless it has it already."""
        key = _key(namespace)
        space = self.spaces.get(key)
        if space is None and namespace:  # (its parents are registered with it; its name guessed)
            self._register(namespace)
            space = self.spaces[key]
        elif space is None:
            space = self.spaces[key] = _Space([], "", self.graph_name)
        name = graph_name or space.graph_name
        if space.status == status and space.graph_name == name and not extra:
            return []
        space.status, space.graph_name = status, name
        data = {"event": status, "graph_name": name, **(extra or {})}
        return [_event("lifecycle", namespace, data, f"{self.run_id}:lc:{key}:{status}")]

    def _end(self, outcome: dict[str, object]) -> list[ProtocolEvent]:
        """The run's end: its open subgraphs ``completed``, then the root's status."""
        status = str(outcome.get("status"))
        if self.ended or (not self.started and status == "interrupted"):  # (cancelled before it ran)
            return []
        self._base, self._count = f"{self.run_id}.end", 0
        out = self._start()
        asked = self._asked([], _requests(as_dict(outcome.get("values")).get("__interrupt__")))
        if asked:
            return out + asked
        self.ended = True
        open_spaces = [s for s in self.spaces.values() if s.namespace and s.status == "started"]
        for space in sorted(open_spaces, key=lambda s: -len(s.namespace)):
            out += self._status(space.namespace, "completed", None)
        error = as_dict(outcome.get("error"))
        extra: dict[str, object] | None = (
            None
            if status in _TERMINAL
            else {"error": str(error.get("message") or error.get("error") or status)}
        )
        return out + self._status([], _TERMINAL.get(status, "failed"), self.graph_name, extra)

    def tree(self) -> dict[str, object]:
        """The run's graph and subgraphs with their status (the ``agent.getTree`` result)."""
        root = self.spaces.get("") or _Space([], "started", self.graph_name)
        return self._node(root)

    def _node(self, space: _Space) -> dict[str, object]:
        depth = len(space.namespace)
        children = sorted(
            (
                s
                for s in self.spaces.values()
                if len(s.namespace) == depth + 1 and is_prefix(s.namespace, space.namespace)
            ),
            key=lambda s: s.namespace,
        )
        node: dict[str, object] = {
            "namespace": space.namespace,
            "status": space.status,
            "graph_name": space.graph_name,
        }
        if children:
            node["children"] = [self._node(c) for c in children]
        return node


class _Request(TypedDict):
    """``input.requested`` data: the interrupt's id and (when it has one) its value."""

    interrupt_id: str
    payload: NotRequired[object]


def _requests(interrupts: object) -> list[_Request]:
    """``input.requested`` data (``{"interrupt_id", "payload"}``) of interrupts as logged."""
    out: list[_Request] = []
    for item in as_list(interrupts):
        found = as_dict(item)
        interrupt_id = found.get("id")
        if isinstance(interrupt_id, str):
            request: _Request = {"interrupt_id": interrupt_id}
            if "value" in found:
                request["payload"] = found["value"]
            out.append(request)
    return out
