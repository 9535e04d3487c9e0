"""Barrier channels (LangGraph's join machinery): their API, and that they cannot serve a state key."""

from typing import Annotated, TypedDict

import pytest

from plait.channels import LastValueAfterFinish, NamedBarrierValue, NamedBarrierValueAfterFinish
from plait.errors import EmptyChannelError, InvalidUpdateError
from plait.graph import StateGraph


def test_barrier_opens_once_every_name_was_written_and_consume_resets_it() -> None:
    barrier = NamedBarrierValue(str, {"a", "b"})
    assert barrier.update(["a"]) is True
    assert barrier.update(["a"]) is False
    with pytest.raises(EmptyChannelError):
        barrier.get()
    barrier.update(["b"])
    assert barrier.get() is None
    restored = barrier.from_checkpoint(barrier.checkpoint())
    assert restored.is_available()
    assert barrier.consume() is True and not barrier.is_available()
    with pytest.raises(InvalidUpdateError):
        barrier.update(["z"])


def test_after_finish_variants_open_only_after_finish() -> None:
    barrier = NamedBarrierValueAfterFinish(str, {"a"})
    barrier.update(["a"])
    assert not barrier.is_available()
    assert barrier.finish() is True and barrier.get() is None
    assert barrier.consume() is True and not barrier.is_available()
    value = LastValueAfterFinish(int)
    value.update([1, 2])
    assert not value.is_available()
    assert value.finish() is True and value.get() == 2
    assert value.from_checkpoint(value.checkpoint()).get() == 2
    assert value.consume() is True and not value.is_available()


def test_a_barrier_cannot_serve_a_state_key() -> None:
    class State(TypedDict):
        gate: Annotated[str, NamedBarrierValue(str, {"a"})]

    with pytest.raises(NotImplementedError, match="NamedBarrierValue"):
        StateGraph(State)
