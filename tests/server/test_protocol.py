"""A run's log read as the thread event protocol's events (plait.server._protocol), and filters."""

from __future__ import annotations

from typing import Any

import orjson

from plait.server._protocol import Filter, RunEvents, check_channel, is_prefix
from plait.server._stream import END


def _entries(reader: RunEvents, *entries: tuple[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for seq, (name, data) in enumerate(entries, 1):
        out += reader.entry(seq, name, orjson.dumps(data))
    return out


def _shown(events: list[dict[str, Any]]) -> list[tuple[str, list[str], Any]]:
    return [(e["method"], e["params"]["namespace"], e["params"]["data"]) for e in events]


def _params(data: Any, namespace: list[str] | None = None, **more: Any) -> dict[str, Any]:
    return {"namespace": namespace or [], "timestamp": 1, "data": data, **more}


def test_a_protocol_run_with_a_subgraph_left_open_completes_it_before_the_root() -> None:
    reader = RunEvents("r1", "nested", protocol=True)
    events = _entries(
        reader,
        ("values", _params({"n": 0}, interrupts=[])),
        ("values|inner:7", _params({"n": 1}, ["inner:7"])),
        ("messages|inner:7", _params(["not a content-block event"], ["inner:7"])),
        (END, {"status": "success", "values": {"n": 1}, "error": None}),
    )
    assert _shown(events) == [
        ("lifecycle", [], {"event": "running", "graph_name": "nested"}),
        ("values", [], {"n": 0}),
        ("values", ["inner:7"], {"n": 1}),
        ("lifecycle", ["inner:7"], {"event": "completed", "graph_name": "inner"}),
        ("lifecycle", [], {"event": "completed", "graph_name": "nested"}),
    ]
    assert [e["event_id"] for e in events] == [
        "r1:lc::running",
        "r1.1",
        "r1.2",
        "r1:lc:inner:7:completed",
        "r1:lc::completed",
    ]
    assert reader.tree() == {
        "namespace": [],
        "status": "completed",
        "graph_name": "nested",
        "children": [{"namespace": ["inner:7"], "status": "completed", "graph_name": "inner"}],
    }


def test_an_interrupt_is_asked_for_once_and_the_root_is_interrupted() -> None:
    reader = RunEvents("r2", "agent", protocol=True)
    asked = {"value": {"q": "sure?"}, "id": "i1"}
    events = _entries(
        reader,
        ("values", _params({"n": 0}, interrupts=[asked])),
        ("values", _params({"n": 0}, interrupts=[asked])),
        (END, {"status": "success", "values": {"n": 0, "__interrupt__": [asked]}, "error": None}),
    )
    assert _shown(events) == [
        ("lifecycle", [], {"event": "running", "graph_name": "agent"}),
        ("input.requested", [], {"interrupt_id": "i1", "payload": {"q": "sure?"}}),
        ("lifecycle", [], {"event": "interrupted", "graph_name": "agent"}),
        ("values", [], {"n": 0}),
        ("values", [], {"n": 0}),
    ]
    assert reader.pending == {"i1": []}


def test_a_failed_run_fails_the_root_with_its_message() -> None:
    reader = RunEvents("r3", "agent", protocol=True)
    events = _entries(
        reader,
        ("error", {"error": "RuntimeError", "message": "boom"}),
        (END, {"status": "error", "values": None, "error": {"error": "RuntimeError", "message": "boom"}}),
    )
    assert events[-1]["params"]["data"] == {"event": "failed", "graph_name": "agent", "error": "boom"}


def test_a_run_cancelled_before_it_ran_shows_nothing() -> None:
    reader = RunEvents("r4", "agent", protocol=True)
    assert _entries(reader, (END, {"status": "interrupted", "values": None, "error": None})) == []


def test_a_run_of_the_other_routes_shows_what_it_logged() -> None:
    reader = RunEvents("r5", "agent", protocol=False)
    asked = {"value": "q", "id": "i9"}
    events = _entries(
        reader,
        ("updates", {"chat": {"n": 1}}),
        ("custom", {"progress": "x"}),
        ("messages/partial", [{"content": "h"}]),
        ("updates", {"__interrupt__": [asked]}),
    )
    assert _shown(events) == [
        ("lifecycle", [], {"event": "running", "graph_name": "agent"}),
        ("updates", [], {"n": 1}),
        ("custom", [], {"payload": {"progress": "x"}}),
        ("input.requested", [], {"interrupt_id": "i9", "payload": "q"}),
        ("lifecycle", [], {"event": "interrupted", "graph_name": "agent"}),
    ]
    assert events[1]["params"]["node"] == "chat"


def test_named_custom_events_and_lifecycle_of_deeper_namespaces() -> None:
    reader = RunEvents("r6", "agent", protocol=True)
    started = {"event": "started", "namespace": ["a:1", "b:2"], "graph_name": "b", "trigger_call_id": "2"}
    events = _entries(
        reader,
        ("custom:progress", _params({"pct": 50})),
        ("lifecycle", _params(started)),
        ("lifecycle", _params(started)),
        ("lifecycle", _params({"event": "drained", "namespace": ["a:1", "b:2"]})),
    )
    assert _shown(events)[1:] == [
        ("custom", [], {"name": "progress", "payload": {"pct": 50}}),
        ("lifecycle", ["a:1", "b:2"], started),
        ("lifecycle", ["a:1", "b:2"], {"event": "interrupted", "graph_name": "b"}),
    ]


def _event(method: str, namespace: list[str], data: Any = None) -> dict[str, Any]:
    return {"method": method, "params": {"namespace": namespace, "data": data}}


def test_filters() -> None:
    only_progress = Filter(frozenset({"custom:progress"}))
    assert only_progress.matches(_event("custom", [], {"name": "progress"}))
    assert not only_progress.matches(_event("custom", [], {"name": "other"}))
    assert Filter(frozenset({"custom"})).matches(_event("custom", [], {"payload": 1}))
    assert Filter(frozenset({"input"})).matches(_event("input.requested", []))
    scoped = Filter(frozenset({"values"}), (("inner",),), depth=0)
    assert scoped.matches(_event("values", ["inner:3"]))
    assert not scoped.matches(_event("values", ["inner:3", "deeper:4"]))
    assert not scoped.matches(_event("values", []))
    assert is_prefix(["a:1", "b"], ["a"]) and not is_prefix(["a:1"], ["a:2"])
    assert check_channel("custom:x") == "custom:x"
    for bad in ("custom:", "debug"):
        try:
            check_channel(bad)
        except ValueError as exc:
            assert "is not a channel" in str(exc)
        else:
            raise AssertionError(f"{bad!r} was taken for a channel")
