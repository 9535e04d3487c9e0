"""``UntrackedValue``: readable during the run, never written to a checkpoint."""

import threading
from typing import Annotated, TypedDict

import pytest

from plait.channels.untracked_value import UntrackedValue
from plait.checkpoint.sqlite import SqliteSaver
from plait.constants import START
from plait.errors import InvalidUpdateError
from plait.graph import StateGraph


def test_checkpoint_is_always_missing() -> None:
    channel = UntrackedValue(str)
    channel.update(["x"])
    assert channel.get() == "x"
    assert not channel.from_checkpoint(channel.checkpoint()).is_available()
    assert channel.copy().get() == "x"
    assert channel.update([]) is False and channel.get() == "x"
    with pytest.raises(InvalidUpdateError):
        channel.update(["a", "b"])


class Resource:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # cannot be serialized


class State(TypedDict):
    resource: Annotated[Resource, UntrackedValue]
    log: list[str]


def test_unserializable_value_is_used_by_later_nodes_and_never_saved(tmp_path) -> None:
    g = StateGraph(State)
    g.add_node("open", lambda s: {"resource": Resource(), "log": ["open"]})
    g.add_node("use", lambda s: {"log": [*s["log"], type(s["resource"]).__name__]})
    g.add_edge(START, "open")
    g.add_edge("open", "use")
    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        app = g.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "1"}}
        out = app.invoke({"log": []}, config)
        assert out["log"] == ["open", "Resource"]
        assert isinstance(out["resource"], Resource)
        state = app.get_state(config)
        assert "resource" not in state.values
        assert state.values["log"] == ["open", "Resource"]
        for snapshot in app.get_state_history(config):
            assert "resource" not in snapshot.values
        for snapshot in app.get_state_history(config):  # the task results history shows leave it out too
            for task in snapshot.tasks:
                assert "resource" not in (task.result or {})
