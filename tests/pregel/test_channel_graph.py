"""Channel graphs: LangGraph's low-level ``Pregel(nodes=..., channels=...)`` with ``NodeBuilder``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plait.channels import DeltaChannel, EphemeralValue, LastValue, Topic
from plait.checkpoint.base import BaseCheckpointSaver
from plait.checkpoint.memory import InMemorySaver
from plait.errors import InvalidUpdateError
from plait.pregel import NodeBuilder, Pregel
from plait.pregel._builder import ChannelWriteEntry, PregelNode
from plait.types import RetryPolicy


@pytest.fixture
def saver(any_saver: Any) -> Any:
    return any_saver


def _extend(state: list[str], writes: list[list[str]]) -> list[str]:
    return [*state, *(v for write in writes for v in write)]


def _chain(saver: Any = None, *, delta: bool = True, **kwargs: Any) -> Pregel:
    """``a`` (on inp) writes ``d``, ``b`` (on d) writes ``x``, ``c`` (on x) writes ``out``."""
    return Pregel(
        nodes={
            "a": NodeBuilder().subscribe_only("inp").do(lambda v: [v + "A"]).write_to("d"),
            "b": NodeBuilder().subscribe_only("d").do(lambda d: "+".join(d)).write_to("x"),
            "c": NodeBuilder().subscribe_only("x").do(lambda x: x + "C").write_to("out"),
        },
        channels={
            "inp": LastValue(str),
            "d": DeltaChannel(_extend) if delta else Topic(str, accumulate=True),
            "x": LastValue(str),
            "out": LastValue(str),
        },
        input_channels="inp",
        output_channels="out",
        checkpointer=saver,
        **kwargs,
    )


CONFIG = {"configurable": {"thread_id": "t"}}


def test_single_input_and_output_channels_take_and_give_bare_values(driver: Any) -> None:
    assert driver.invoke(_chain(), "go") == "goAC"


def test_list_channels_take_and_give_dicts(driver: Any) -> None:
    graph = Pregel(
        nodes={
            "sum": NodeBuilder().subscribe_to("a", "b").do(lambda s: s["a"] + s.get("b", 0)).write_to("total")
        },
        channels={"a": LastValue(int), "b": LastValue(int), "total": LastValue(int)},
        input_channels=["a", "b"],
        output_channels=["total", "a"],
    )
    assert driver.invoke(graph, {"a": 2, "b": 3}) == {"total": 5, "a": 2}
    assert driver.invoke(graph, {"a": 2}) == {"total": 2, "a": 2}  # unset channels are left out


def test_read_from_reads_without_triggering_and_write_to_keywords() -> None:
    graph = Pregel(
        nodes={
            "one": NodeBuilder()
            .subscribe_only("inp")
            .do(lambda v: v.upper())
            .write_to("up", go="yes", size=lambda up: len(up)),
            "two": NodeBuilder().subscribe_to("go").read_from("up", "size").do(lambda s: s).write_to("out"),
            "never": NodeBuilder().subscribe_only("unused").do(lambda v: "no").write_to("out"),
        },
        channels={
            "inp": LastValue(str),
            "up": LastValue(str),
            "go": EphemeralValue(str),
            "size": LastValue(int),
            "unused": LastValue(str),
            "out": LastValue(dict),
        },
        input_channels="inp",
        output_channels="out",
    )
    assert graph.invoke("abc") == {"go": "yes", "up": "ABC", "size": 3}


def test_do_chains_functions_and_async_functions() -> None:
    async def slow_double(value: int) -> int:
        await asyncio.sleep(0)
        return value * 2

    graph = Pregel(
        nodes={"n": NodeBuilder().subscribe_only("a").do(lambda v: v + 1).do(slow_double).write_to("b")},
        channels={"a": LastValue(int), "b": LastValue(int)},
        input_channels="a",
        output_channels="b",
    )
    assert asyncio.run(graph.ainvoke(3)) == 8
    assert graph.invoke(3) == 8  # plait also runs the chain's coroutine functions from invoke


def test_a_node_that_writes_a_channel_it_subscribes_to_runs_again() -> None:
    graph = Pregel(
        nodes={
            "count": NodeBuilder()
            .subscribe_only("n")
            .do(lambda n: n + 1)
            .write_to(ChannelWriteEntry("n", mapper=lambda n: n if n < 5 else None, skip_none=True)),
            "log": NodeBuilder().subscribe_only("n").do(lambda n: [n]).write_to("seen"),
        },
        channels={"n": LastValue(int), "seen": Topic(int, accumulate=True)},
        input_channels="n",
        output_channels=["n", "seen"],
    )
    assert graph.invoke(0) == {"n": 4, "seen": [0, 1, 2, 3, 4]}


def test_streams_updates_and_values_per_step(driver: Any) -> None:
    chunks = driver.stream(_chain(), "go", stream_mode=["updates", "values"])
    assert chunks == [
        ("updates", {"a": {"d": ["goA"]}}),
        ("values", {"inp": "go", "d": ["goA"]}),
        ("updates", {"b": {"x": "goA"}}),
        ("values", {"inp": "go", "d": ["goA"], "x": "goA"}),
        ("updates", {"c": {"out": "goAC"}}),
        ("values", {"inp": "go", "d": ["goA"], "x": "goA", "out": "goAC"}),
    ]


def test_the_input_checkpoint_holds_the_input_and_the_first_nodes(saver: Any) -> None:
    graph = _chain(saver, delta=False)
    graph.invoke("go", CONFIG)
    history = [(s.metadata["source"], s.metadata["step"], s.next) for s in graph.get_state_history(CONFIG)]
    assert history == [("loop", 2, ()), ("loop", 1, ("c",)), ("loop", 0, ("b",)), ("input", -1, ("a",))]
    first = list(graph.get_state_history(CONFIG))[-1]
    assert first.values == {"inp": "go"}


def test_interrupt_before_nodes_pauses_and_resumes(saver: Any, driver: Any) -> None:
    graph = _chain(saver, interrupt_before_nodes=["c"])
    assert driver.invoke(graph, "go", CONFIG) is None  # out is not written yet
    assert driver.get_state(graph, CONFIG).next == ("c",)
    assert driver.invoke(graph, None, CONFIG) == "goAC"


def test_update_state_as_a_node_goes_through_its_writers(saver: Any, driver: Any) -> None:
    graph = _chain(saver)
    driver.update_state(graph, CONFIG, ["u"], "a")  # a new thread: a writes d, which starts b
    assert driver.get_state(graph, CONFIG).next == ("b",)
    assert driver.invoke(graph, None, CONFIG) == "uC"


def test_update_state_without_as_node_applies_as_the_last_writer(saver: Any, driver: Any) -> None:
    graph = _chain(saver, interrupt_after_nodes=["b"])
    driver.invoke(graph, "go", CONFIG)
    driver.update_state(graph, CONFIG, "mine")  # b wrote last: the value goes to x
    state = driver.get_state(graph, CONFIG)
    assert state.values["x"] == "mine" and state.next == ("c",)


def test_update_state_after_an_exit_run_applies_as_the_last_writer(saver: Any) -> None:
    graph = _chain(saver)
    graph.invoke("go", CONFIG, durability="exit")
    graph.update_state(CONFIG, "u")
    assert graph.get_state(CONFIG).values["out"] == "u"


def test_an_update_that_no_single_node_wrote_is_ambiguous(saver: Any) -> None:
    graph = Pregel(
        nodes={
            "a": NodeBuilder().subscribe_only("inp").do(lambda v: v).write_to("x"),
            "b": NodeBuilder().subscribe_only("inp").do(lambda v: v).write_to("x"),
        },
        channels={"inp": LastValue(str), "x": Topic(str, accumulate=True)},
        input_channels="inp",
        output_channels="x",
        checkpointer=saver,
    )
    assert graph.invoke("v", CONFIG) == ["v", "v"]
    with pytest.raises(InvalidUpdateError, match="Ambiguous update"):
        graph.update_state(CONFIG, "u")


def test_integer_versions_from_the_saver_base_class() -> None:
    class IntVersions(InMemorySaver):
        get_next_version = BaseCheckpointSaver.get_next_version

    graph = _chain(IntVersions())
    assert graph.invoke("go", CONFIG) == "goAC"
    versions = graph.checkpointer.get_tuple(CONFIG).checkpoint["channel_versions"]
    assert versions and all(isinstance(v, int) for v in versions.values())


def test_retry_policies_of_a_node_apply() -> None:
    calls: list[int] = []

    def flaky(value: int) -> int:
        calls.append(value)
        if len(calls) < 2:
            raise ValueError("once")
        return value

    retry = RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False, retry_on=ValueError)
    graph = Pregel(
        nodes={"n": NodeBuilder().subscribe_only("a").do(flaky).write_to("b").add_retry_policies(retry)},
        channels={"a": LastValue(int), "b": LastValue(int)},
        input_channels="a",
        output_channels="b",
    )
    assert graph.invoke(7) == 7 and calls == [7, 7]


def test_build_gives_the_node_description() -> None:
    node = (
        NodeBuilder()
        .subscribe_to("a", "b", read=False)
        .read_from("c")
        .do(lambda s: s)
        .write_to("out", flag=True)
        .meta("t1", owner="me")
        .build()
    )
    assert isinstance(node, PregelNode)
    assert node.triggers == ["a", "b"] and node.channels == ["c"]
    assert node.tags == ["t1"] and node.metadata == {"owner": "me"}
    assert node.writes("v") == [("out", "v"), ("flag", True)]


def test_builder_misuse_is_refused() -> None:
    with pytest.raises(ValueError, match="single channel"):
        NodeBuilder().subscribe_only("a").subscribe_to("b")
    with pytest.raises(ValueError, match="already subscribed"):
        NodeBuilder().subscribe_to("b").subscribe_only("a")
    with pytest.raises(ValueError, match="single channel"):
        NodeBuilder().subscribe_only("a").read_from("b")
    with pytest.raises(TypeError):
        NodeBuilder().do(42)


def test_unknown_channels_nodes_and_options_are_refused() -> None:
    channels = {"a": LastValue(int), "b": LastValue(int)}
    node = NodeBuilder().subscribe_only("a").write_to("b")
    with pytest.raises(ValueError, match="'zz'"):
        Pregel(
            nodes={"n": NodeBuilder().subscribe_only("zz")},
            channels=channels,
            input_channels="a",
            output_channels="b",
        )
    with pytest.raises(ValueError, match="Output channel 'zz'"):
        Pregel(nodes={"n": node}, channels=channels, input_channels="a", output_channels="zz")
    with pytest.raises(ValueError, match="Interrupt node 'zz'"):
        Pregel(
            nodes={"n": node},
            channels=channels,
            input_channels="a",
            output_channels="b",
            interrupt_before_nodes=["zz"],
        )
    with pytest.raises(TypeError, match="bogus"):
        Pregel(nodes={"n": node}, channels=channels, input_channels="a", output_channels="b", bogus=1)
    with pytest.raises(NotImplementedError, match="stream_channels"):
        Pregel(
            nodes={"n": node}, channels=channels, input_channels="a", output_channels="b", stream_channels="b"
        )
