"""Graphs whose state is one value: ``StateGraph(Annotated[list, operator.add])``."""

import operator
from typing import Annotated

import pytest

from plait.constants import START
from plait.graph import StateGraph
from plait.types import Command, Send


def _chain() -> StateGraph:
    g = StateGraph(Annotated[str, operator.add])
    g.add_node("a", lambda s: [Command(update="a1"), Command(update="a2")])
    g.add_node("b", lambda s: "b")
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g


def test_nodes_receive_and_return_the_value(driver) -> None:
    assert driver.invoke(_chain().compile(), "x") == "xa1a2b"


def test_stream_values_and_updates_show_bare_values(driver) -> None:
    app = _chain().compile()
    assert driver.stream(app, "", stream_mode="values") == ["", "a1a2", "a1a2b"]
    updates = driver.stream(app, "", stream_mode="updates")
    assert updates[-1] == {"b": "b"}


def test_a_list_with_commands_is_several_updates_and_other_lists_one_value() -> None:
    g = StateGraph(Annotated[list[str], operator.add])
    g.add_node("mixed", lambda s: [Command(update=["a"]), ["b"]])
    g.add_node("plain", lambda s: ["c", "d"])
    g.add_edge(START, "mixed")
    g.add_edge("mixed", "plain")
    assert g.compile().invoke([]) == ["a", "b", "c", "d"]


def test_send_passes_its_argument_and_conditional_edges_see_the_value() -> None:
    g = StateGraph(Annotated[list, operator.add])
    g.add_node("fan", lambda s: ["fan"])
    g.add_node("each", lambda n: [f"each{n}"])
    g.add_edge(START, "fan")
    g.add_conditional_edges("fan", lambda s: [Send("each", len(s)), Send("each", 9)])
    assert g.compile().invoke(["in"]) == ["in", "fan", "each2", "each9"]


def test_threads_show_and_update_the_value(driver, saver, thread) -> None:
    app = _chain().compile(checkpointer=saver)
    driver.invoke(app, "", thread)
    assert driver.get_state(app, thread).values == "a1a2b"
    driver.update_state(app, thread, "!", as_node="b")
    assert driver.get_state(app, thread).values == "a1a2b!"
    assert [s.values for s in driver.get_state_history(app, thread)][-1] in ("", None)


def test_a_plain_type_is_a_last_value_state() -> None:
    g = StateGraph(int).add_node("double", lambda n: n * 2).add_edge(START, "double")
    assert g.compile().invoke(21) == 42
    with pytest.raises(Exception, match="one value per step"):
        StateGraph(int).add_node("a", lambda n: 1).add_node("b", lambda n: 2).add_edge(START, "a").add_edge(
            START, "b"
        ).compile().invoke(0)
