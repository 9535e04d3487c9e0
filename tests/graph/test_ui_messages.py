"""plait.graph.ui: UI messages streamed on ``custom`` and kept in state by ``ui_message_reducer``."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.graph import START, StateGraph
from plait.graph.ui import AnyUIMessage, delete_ui_message, push_ui_message, ui_message_reducer


class State(TypedDict):
    ui: Annotated[list[AnyUIMessage], ui_message_reducer]
    n: int


def _graph() -> Any:
    def first(state: State) -> dict[str, Any]:
        push_ui_message("card", {"x": 1}, id="m1")
        push_ui_message("card", {"y": 2}, id="m1", merge=True)
        push_ui_message("toast", {}, id="m2", state_key=None)  # streamed only
        return {"n": 1}

    async def second(state: State) -> dict[str, Any]:
        delete_ui_message("m1")
        push_ui_message("chart", {"q": 1}, id="m3", metadata={"k": "v"})
        return {"n": 2}

    builder = StateGraph(State)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    return builder.compile()


def test_pushed_messages_stream_and_land_in_state() -> None:
    chunks = list(_graph().stream({"ui": [], "n": 0}, stream_mode=["custom", "values"]))
    custom = [(c["type"], c["id"]) for mode, c in chunks if mode == "custom"]
    assert custom == [("ui", "m1"), ("ui", "m1"), ("ui", "m2"), ("remove-ui", "m1"), ("ui", "m3")]
    values = [c for mode, c in chunks if mode == "values"]
    after_first = values[1]["ui"]
    assert [(m["id"], m["props"]) for m in after_first] == [("m1", {"x": 1, "y": 2})]  # merged; m2 not stored
    final = values[-1]["ui"]
    assert [m["id"] for m in final] == ["m3"]
    assert final[0]["metadata"]["k"] == "v"
    assert final[0]["metadata"]["merge"] is False


async def test_async_run() -> None:
    out = await _graph().ainvoke({"ui": [], "n": 0})
    assert [m["id"] for m in out["ui"]] == ["m3"]


def test_reducer_replaces_merges_and_removes() -> None:
    a: AnyUIMessage = {"type": "ui", "id": "a", "name": "c", "props": {"p": 1}, "metadata": {}}
    b: AnyUIMessage = {"type": "ui", "id": "a", "name": "c", "props": {"q": 2}, "metadata": {"merge": True}}
    assert ui_message_reducer([a], b)[0]["props"] == {"p": 1, "q": 2}  # type: ignore[typeddict-item]
    replaced = {**b, "metadata": {}}
    assert ui_message_reducer([a], replaced)[0]["props"] == {"q": 2}  # type: ignore[typeddict-item]
    assert ui_message_reducer(a, {"type": "remove-ui", "id": "a"}) == []


def test_removing_an_unknown_id_fails() -> None:
    with pytest.raises(ValueError, match="doesn't exist \\('zz'\\)"):
        ui_message_reducer([], {"type": "remove-ui", "id": "zz"})


def test_outside_a_node_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        push_ui_message("card", {})
