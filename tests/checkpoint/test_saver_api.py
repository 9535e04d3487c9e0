"""The saver base-class API that user-written savers rely on (LangGraph's signatures)."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.checkpoint.base import BaseCheckpointSaver
from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.serde.base import SerializerProtocol
from plait.checkpoint.serde.jsonplus import JsonPlusSerializer
from plait.graph import START, StateGraph


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _graph(saver: Any) -> Any:
    return (
        StateGraph(S).add_node("a", lambda s: {"x": ["a"]}).add_edge(START, "a").compile(checkpointer=saver)
    )


def test_an_overridden_get_next_version_is_used() -> None:
    class Faulty(InMemorySaver):
        def get_next_version(self, current: Any, channel: None = None) -> Any:
            raise ValueError("Faulty get_next_version")

    with pytest.raises(ValueError, match="Faulty get_next_version"):
        _graph(Faulty()).invoke({"x": []}, {"configurable": {"thread_id": "1"}})


def test_string_versions_from_a_saver_round_trip() -> None:
    class Stamped(InMemorySaver):
        def get_next_version(self, current: Any, channel: None = None) -> Any:
            return f"{int(str(current or '0').split('.')[0]) + 1:08}.v"

    graph = _graph(Stamped())
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"x": []}, config)
    assert graph.invoke({"x": ["b"]}, config) == {"x": ["a", "b", "a"]}
    versions = graph.checkpointer.get_tuple(config).checkpoint["channel_versions"]
    assert versions and all(str(v).endswith(".v") for v in versions.values())


def test_a_put_with_langgraphs_signature_is_called_without_expected_head() -> None:
    calls: list[str] = []

    class Logged(InMemorySaver):
        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any = None) -> Any:
            calls.append(metadata["source"])
            return super().put(config, checkpoint, metadata, new_versions)

    assert _graph(Logged()).invoke({"x": []}, {"configurable": {"thread_id": "1"}}) == {"x": ["a"]}
    assert calls == ["input", "loop", "loop"]


def test_the_base_default_versions_and_serializer() -> None:
    assert BaseCheckpointSaver.get_next_version(InMemorySaver(), None, None) == 1
    assert BaseCheckpointSaver.get_next_version(InMemorySaver(), 4, None) == 5
    serde = JsonPlusSerializer()
    assert isinstance(serde, SerializerProtocol)
    for value in (None, b"raw", {"a": [1, ["t", 2]]}):
        assert serde.loads_typed(serde.dumps_typed(value)) == value
    assert serde.loads_typed(serde.dumps_typed(("t", (2,)))) == ["t", [2]]  # as LangGraph reads a tuple
    assert serde.loads_typed(("json", b'{"k": 1}')) == {"k": 1}
    with pytest.raises(NotImplementedError, match="pickle"):
        JsonPlusSerializer(pickle_fallback=True)
    with pytest.raises(NotImplementedError, match="allowed_msgpack_modules=True"):
        JsonPlusSerializer(allowed_msgpack_modules=True)
