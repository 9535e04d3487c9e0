"""``AnyValue``: several writers of the same value in one step."""

from typing import Annotated, TypedDict

from plait.channels.any_value import AnyValue
from plait.constants import START
from plait.graph import StateGraph


def test_update_takes_the_last_value_and_an_empty_step_clears() -> None:
    channel = AnyValue(int)
    assert channel.update([1, 1]) is True
    assert channel.get() == 1
    assert channel.update([]) is True
    assert not channel.is_available()
    assert channel.update([]) is False


class State(TypedDict):
    verdict: Annotated[str, AnyValue(str)]
    out: str


def test_parallel_writers_do_not_conflict(driver) -> None:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"verdict": "ok"})
    g.add_node("b", lambda s: {"verdict": "ok"})
    g.add_node("c", lambda s: {"out": s["verdict"]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "c")
    assert driver.invoke(g.compile(), {"out": ""}) == {"out": "ok"}
