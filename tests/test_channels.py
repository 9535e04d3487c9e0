"""``Overwrite`` and channel merge semantics, through real graphs."""

import operator
from typing import Annotated, TypedDict

import pytest

from plait.constants import START
from plait.errors import InvalidUpdateError
from plait.graph import StateGraph
from plait.types import Overwrite


class S(TypedDict):
    entries: Annotated[list, operator.add]
    x: int


def test_overwrite_from_node_bypasses_reducer() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": Overwrite(["only"])})
    g.add_edge(START, "a")
    assert g.compile().invoke({"entries": [1, 2]})["entries"] == ["only"]


def test_overwrite_from_input_bypasses_reducer() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": ["n"]})
    g.add_edge(START, "a")
    assert g.compile().invoke({"entries": Overwrite(["i"])})["entries"] == ["i", "n"]


def test_overwrite_after_regular_write_in_same_step_wins() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": ["a"]})
    g.add_node("b", lambda s: {"entries": Overwrite(["reset"])})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    assert g.compile().invoke({"entries": ["old"]})["entries"] == ["reset"]


def test_overwrite_before_regular_write_in_same_step_wins() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": Overwrite(["reset"])})
    g.add_node("b", lambda s: {"entries": ["b"]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    assert g.compile().invoke({"entries": ["old"]})["entries"] == ["reset"]


def test_two_overwrites_in_one_step_rejected() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": Overwrite([1])})
    g.add_node("b", lambda s: {"entries": Overwrite([2])})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError) as info:
        g.compile().invoke({"entries": []})
    assert info.value.key == "entries"


def test_two_overwrites_message_matches_langgraph() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": Overwrite([1])})
    g.add_node("b", lambda s: {"entries": Overwrite([2])})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError) as info:
        g.compile().invoke({"entries": []})
    assert str(info.value) == (
        "Can receive only one Overwrite value per super-step.\n"
        "For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CONCURRENT_GRAPH_UPDATE"
    )


def test_reducer_folds_parallel_writes_in_node_name_order() -> None:
    g = StateGraph(S)
    for n in ("c", "a", "b"):
        g.add_node(n, lambda s, n=n: {"entries": [n]})
        g.add_edge(START, n)
    assert g.compile().invoke({"entries": []})["entries"] == ["a", "b", "c"]


def test_unknown_key_in_update_is_dropped_with_a_warning() -> None:
    from plait.errors import UndeclaredKeyWarning

    g = StateGraph(S)
    g.add_node("a", lambda s: {"nope": 1, "x": 2})
    g.add_edge(START, "a")
    with pytest.warns(UndeclaredKeyWarning, match="Node 'a' wrote key 'nope'"):
        assert g.compile().invoke({"x": 0}) == {"entries": [], "x": 2}


def test_the_json_form_of_overwrite_from_an_api_client_bypasses_the_reducer_too() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": ["a"]})
    g.add_node("b", lambda s: {"entries": {"__overwrite__": ["b"]}, "x": {"__overwrite__": 7}})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    assert g.compile().invoke({"entries": ["in"]}) == {"entries": ["b"], "x": 7}


def test_a_dict_with_other_keys_is_an_ordinary_value() -> None:
    class D(TypedDict):
        d: Annotated[list, operator.add]

    g = StateGraph(D).add_node("a", lambda s: {"d": [{"__overwrite__": 1, "other": 2}]}).add_edge(START, "a")
    assert g.compile().invoke({"d": []})["d"] == [{"__overwrite__": 1, "other": 2}]


def test_two_overwrites_one_in_json_form_are_rejected() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"entries": Overwrite([1])})
    g.add_node("b", lambda s: {"entries": {"__overwrite__": [2]}})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError):
        g.compile().invoke({"entries": []})


def test_an_object_that_is_not_a_saver_is_refused_at_compile() -> None:
    class NotASaver:
        pass

    g = StateGraph(S).add_node("a", lambda s: {"x": 1}).add_edge(START, "a")
    with pytest.raises(TypeError, match="Invalid checkpointer provided.*NotASaver"):
        g.compile(checkpointer=NotASaver())
