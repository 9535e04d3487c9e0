"""``EphemeralValue``: a value for the next step only."""

from typing import Annotated, TypedDict

import pytest

from plait.channels.ephemeral_value import EphemeralValue
from plait.constants import START
from plait.errors import EmptyChannelError, InvalidUpdateError
from plait.graph import StateGraph


def test_update_keeps_the_step_value_and_an_empty_step_clears_it() -> None:
    channel = EphemeralValue(str)
    assert channel.update(["v"]) is True
    assert channel.get() == "v"
    assert channel.update([]) is True
    with pytest.raises(EmptyChannelError):
        channel.get()
    assert channel.update([]) is False


def test_guard_rejects_two_writes_in_a_step_unless_disabled() -> None:
    with pytest.raises(InvalidUpdateError, match="EphemeralValue"):
        EphemeralValue(int).update([1, 2])
    loose = EphemeralValue(int, guard=False)
    loose.update([1, 2])
    assert loose.get() == 2
    assert loose.from_checkpoint(loose.checkpoint()).get() == 2


class State(TypedDict):
    signal: Annotated[str, EphemeralValue(str)]
    plain: Annotated[str, EphemeralValue]  # the class works too
    seen: list[str]


def test_a_node_sees_the_value_written_one_step_before_and_later_nodes_do_not(driver) -> None:
    g = StateGraph(State)
    g.add_node("send", lambda s: {"signal": "go", "plain": "p"})
    g.add_node("first", lambda s: {"seen": [s.get("signal", "-"), s.get("plain", "-")]})
    g.add_node("second", lambda s: {"seen": [*s["seen"], s.get("signal", "-")]})
    g.add_edge(START, "send")
    g.add_edge("send", "first")
    g.add_edge("first", "second")
    out = driver.invoke(g.compile(), {"seen": []})
    assert out["seen"] == ["go", "p", "-"]
    assert "signal" not in out


def test_two_writers_in_one_step_fail_naming_the_key() -> None:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"signal": "a"})
    g.add_node("b", lambda s: {"signal": "b"})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError, match="signal") as info:
        g.compile().invoke({"seen": []})
    assert info.value.key == "signal"
