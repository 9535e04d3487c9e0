"""The sync and async drivers execute one run loop: the same answers, subgraphs and routers on both."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, StateGraph
from plait.types import Command, interrupt


class S(TypedDict):
    question: str
    answer: str
    log: Annotated[list[str], operator.add]


def _asking_subgraph() -> Any:
    def ask(state: S) -> dict[str, Any]:
        return {"answer": interrupt(state["question"])}

    return StateGraph(S).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END).compile()


def test_a_subgraph_awaited_inside_a_node_pauses_the_parent(driver: Any) -> None:
    sub = _asking_subgraph()

    async def relay(state: S) -> dict[str, Any]:
        out = await sub.ainvoke({"question": state["question"]})
        return {"answer": out["answer"], "log": ["relayed"]}

    parent = (
        StateGraph(S)
        .add_node("p", relay)
        .add_edge(START, "p")
        .add_edge("p", END)
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    out = driver.invoke(parent, {"question": "name?", "log": []}, config)
    assert [i.value for i in out["__interrupt__"]] == ["name?"]
    assert driver.get_state(parent, config).next == ("p",)
    out = driver.invoke(parent, Command(resume="Ada"), config)
    assert out["answer"] == "Ada" and out["log"] == ["relayed"]
    assert driver.get_state(parent, config).next == ()


def test_a_compiled_subgraph_node_pauses_and_resumes(driver: Any) -> None:
    parent = (
        StateGraph(S)
        .add_node("sub", _asking_subgraph())
        .add_edge(START, "sub")
        .add_edge("sub", END)
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "t"}}
    out = driver.invoke(parent, {"question": "age?", "log": []}, config)
    assert [i.value for i in out["__interrupt__"]] == ["age?"]
    assert driver.invoke(parent, Command(resume="36"), config)["answer"] == "36"


def _routed(route: Any) -> Any:
    def start(state: S) -> dict[str, Any]:
        return {"log": ["start"]}

    def left(state: S) -> dict[str, Any]:
        return {"log": ["left"]}

    def right(state: S) -> dict[str, Any]:
        return {"log": ["right"]}

    return (
        StateGraph(S)
        .add_node("start", start)
        .add_node("left", left)
        .add_node("right", right)
        .add_edge(START, "start")
        .add_conditional_edges("start", route, ["left", "right"])
        .add_edge("left", END)
        .add_edge("right", END)
        .compile()
    )


async def test_an_async_router_runs_on_the_callers_event_loop() -> None:
    caller = asyncio.get_running_loop()
    choices: asyncio.Queue[str] = asyncio.Queue()  # bound to this loop once used
    await choices.put("right")
    seen: list[Any] = []

    async def route(state: S) -> str:
        seen.append(asyncio.get_running_loop())
        return await asyncio.wait_for(choices.get(), 60)

    out = await _routed(route).ainvoke({"question": "", "log": []})
    assert out["log"] == ["start", "right"] and seen == [caller]
    await choices.put("left")
    chunks = [c async for c in _routed(route).astream({"question": "", "log": []}, stream_mode="updates")]
    assert [next(iter(c)) for c in chunks] == ["start", "left"]


def test_sync_and_async_routers_answer_alike(driver: Any) -> None:
    async def aroute(state: S) -> str:
        await asyncio.sleep(0)
        return "left"

    def route(state: S, config: Any) -> str:
        return "right" if config["configurable"]["side"] == "right" else "left"

    assert driver.invoke(_routed(aroute), {"question": "", "log": []})["log"] == ["start", "left"]
    config = {"configurable": {"side": "right"}}
    assert driver.invoke(_routed(route), {"question": "", "log": []}, config)["log"] == ["start", "right"]


def test_update_state_as_a_routed_node_calls_its_router(driver: Any) -> None:
    async def aroute(state: S) -> str:
        return "right"

    graph = (
        StateGraph(S)
        .add_node("start", lambda s: {})
        .add_node("left", lambda s: {})
        .add_node("right", lambda s: {})
        .add_edge(START, "start")
        .add_conditional_edges("start", aroute, ["left", "right"])
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "u"}}
    driver.update_state(graph, config, {"log": ["by hand"]}, as_node="start")
    assert driver.get_state(graph, config).next == ("right",)


def test_an_async_node_under_a_sync_invoke_made_from_async_code_runs() -> None:
    """A sync ``invoke`` called inside a running event loop still runs the graph's async nodes (on a loop
    of their own in a worker thread, with the node's context: interrupts and get_config work there)."""
    import asyncio as _asyncio
    import warnings as _warnings

    from typing_extensions import TypedDict as _TypedDict

    from plait.checkpoint.memory import InMemorySaver
    from plait.config import get_config
    from plait.graph import START as _START
    from plait.graph import StateGraph as _StateGraph
    from plait.types import Command, interrupt

    class S(_TypedDict):
        x: int

    async def node(state):  # type: ignore[no-untyped-def]  # (no hint: this module has another S)
        await _asyncio.sleep(0)
        answer = interrupt("how much?")
        assert get_config()["configurable"]["thread_id"] == "t"
        return {"x": state["x"] + int(answer)}

    graph = _StateGraph(S).add_node("n", node).add_edge(_START, "n").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def main() -> dict[str, int]:
        first = graph.invoke({"x": 1}, config)
        assert first["__interrupt__"][0].value == "how much?"
        return graph.invoke(Command(resume="41"), config)

    with _warnings.catch_warnings():
        _warnings.simplefilter("error")  # (no "coroutine was never awaited")
        assert _asyncio.run(main()) == {"x": 42}
