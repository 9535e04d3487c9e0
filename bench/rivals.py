"""W1 and W3 for the implementations without a LangGraph-shaped ``StateGraph``.

Imported by ``bench/workloads.py`` (``--impl floor|burr|pydantic-graph``); each
builder returns ``(call, check)`` like the ``build_w*`` functions there, so the
worker times them the same way.

* ``floor`` - the plain-Python floor: the same node functions as the graph
  versions (each takes the state dict and returns an update dict), called by
  straight Python that merges every returned dict into the state dict.  W1:
  ``a``, ``b``, ``c`` in sequence.  W3: ``inc`` then the router until the
  router says stop.  Stdlib only.
* ``burr`` - Apache Burr: ``@action`` functions returning ``state.update(...)``,
  a ``Graph`` built once with ``GraphBuilder`` (the analogue of ``compile()``),
  and per invoke a fresh ``Application`` (``ApplicationBuilder().with_graph(...)``;
  a Burr application holds the state of one run) run synchronously with
  ``app.run(...)``.  W1 halts after ``c``.  W3 loops ``inc -> inc`` while
  ``when(counter__lt=500)`` and otherwise transitions to ``done``, which the run
  halts before (``halt_before=["done"]``), so exactly 500 actions run.
* ``pydantic-graph`` - ``GraphBuilder`` with ``async`` ``@g.step`` functions
  mutating a dataclass state (the library's state model), built once; each
  invoke is ``graph.run_sync(state=...)``.  W3 routes the step's output through
  ``g.decision()``: ``match(int, matches=n < 500) -> inc``, else ``-> end``.

Every ``check`` asserts the issue's outputs: W1 value ``"xabc"``, W3 counter 500.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

END = "__end__"
Built = tuple[Callable[[], Any], Callable[[Any], None]]


# --- plain-Python floor --------------------------------------------------------


def floor_w1() -> Built:
    def node_a(state: dict[str, str]) -> dict[str, str]:
        return {"value": state["value"] + "a"}

    def node_b(state: dict[str, str]) -> dict[str, str]:
        return {"value": state["value"] + "b"}

    def node_c(state: dict[str, str]) -> dict[str, str]:
        return {"value": state["value"] + "c"}

    def invoke(inp: dict[str, str]) -> dict[str, str]:
        state = dict(inp)
        state.update(node_a(state))
        state.update(node_b(state))
        state.update(node_c(state))
        return state

    inp = {"value": "x"}

    def check(out: Any) -> None:
        assert out == {"value": "xabc"}, out

    return (lambda: invoke(inp)), check


def floor_w3(target: int = 500) -> Built:
    def inc(state: dict[str, int]) -> dict[str, int]:
        return {"counter": state["counter"] + 1}

    def route(state: dict[str, int]) -> str:
        return END if state["counter"] >= target else "inc"

    def invoke(inp: dict[str, int]) -> dict[str, int]:
        state = dict(inp)
        while True:
            state.update(inc(state))
            if route(state) == END:
                return state

    inp = {"counter": 0}

    def check(out: Any) -> None:
        assert out == {"counter": target}, out

    return (lambda: invoke(inp)), check


# --- Apache Burr ---------------------------------------------------------------


def burr_w1() -> Built:
    from burr.core import ApplicationBuilder, GraphBuilder, State, action

    @action(reads=["value"], writes=["value"])
    def a(state: State) -> State:
        return state.update(value=state["value"] + "a")

    @action(reads=["value"], writes=["value"])
    def b(state: State) -> State:
        return state.update(value=state["value"] + "b")

    @action(reads=["value"], writes=["value"])
    def c(state: State) -> State:
        return state.update(value=state["value"] + "c")

    graph = GraphBuilder().with_actions(a, b, c).with_transitions(("a", "b"), ("b", "c")).build()

    def invoke() -> Any:
        app = ApplicationBuilder().with_graph(graph).with_entrypoint("a").with_state(value="x").build()
        _action, _result, state = app.run(halt_after=["c"])
        return state

    def check(state: Any) -> None:
        assert state["value"] == "xabc", state

    return invoke, check


def burr_w3(target: int = 500) -> Built:
    from burr.core import ApplicationBuilder, GraphBuilder, State, action, default, when

    @action(reads=["counter"], writes=["counter"])
    def inc(state: State) -> State:
        return state.update(counter=state["counter"] + 1)

    @action(reads=["counter"], writes=[])
    def done(state: State) -> State:  # never runs: the run halts before it
        return state

    graph = (
        GraphBuilder()
        .with_actions(inc, done)
        .with_transitions(("inc", "inc", when(counter__lt=target)), ("inc", "done", default))
        .build()
    )

    def invoke() -> Any:
        app = ApplicationBuilder().with_graph(graph).with_entrypoint("inc").with_state(counter=0).build()
        _action, _result, state = app.run(halt_before=["done"])
        return state

    def check(state: Any) -> None:
        assert state["counter"] == target, state
        # sequence ids count actions from 0: 500 actions ran, no more
        assert state["__SEQUENCE_ID"] == target - 1, state

    return invoke, check


# --- pydantic-graph ------------------------------------------------------------


@dataclass
class W1Data:
    value: str


@dataclass
class W3Data:
    counter: int


def pgraph_w1() -> Built:
    from pydantic_graph import GraphBuilder, StepContext

    g = GraphBuilder(state_type=W1Data, output_type=str)

    @g.step
    async def a(ctx: StepContext[W1Data, None, None]) -> None:
        ctx.state.value += "a"

    @g.step
    async def b(ctx: StepContext[W1Data, None, None]) -> None:
        ctx.state.value += "b"

    @g.step
    async def c(ctx: StepContext[W1Data, None, None]) -> str:
        ctx.state.value += "c"
        return ctx.state.value

    g.add(
        g.edge_from(g.start_node).to(a),
        g.edge_from(a).to(b),
        g.edge_from(b).to(c),
        g.edge_from(c).to(g.end_node),
    )
    graph = g.build()

    def invoke() -> tuple[W1Data, str]:
        state = W1Data(value="x")
        return state, graph.run_sync(state=state)

    def check(out: Any) -> None:
        state, output = out
        assert state.value == "xabc" and output == "xabc", out

    return invoke, check


def pgraph_w3(target: int = 500) -> Built:
    from pydantic_graph import GraphBuilder, StepContext

    g = GraphBuilder(state_type=W3Data, output_type=int)

    @g.step
    async def inc(ctx: StepContext[W3Data, None, object]) -> int:
        ctx.state.counter += 1
        return ctx.state.counter

    g.add(
        g.edge_from(g.start_node).to(inc),
        g.edge_from(inc).to(
            g.decision()
            .branch(g.match(int, matches=lambda n: n < target).to(inc))
            .branch(g.match(int).to(g.end_node))
        ),
    )
    graph = g.build()

    def invoke() -> tuple[W3Data, int]:
        state = W3Data(counter=0)
        return state, graph.run_sync(state=state)

    def check(out: Any) -> None:
        state, output = out
        assert state.counter == target and output == target, out

    return invoke, check


# impl -> (workload -> builder, module whose objects prove the library ran, distribution)
IMPLS: dict[str, tuple[dict[str, Callable[[], Built]], str, str | None]] = {
    "floor": ({"W1": floor_w1, "W3": floor_w3}, __name__, None),
    "burr": ({"W1": burr_w1, "W3": burr_w3}, "burr.core.application", "apache-burr"),
    "pydantic-graph": ({"W1": pgraph_w1, "W3": pgraph_w3}, "pydantic_graph.graph_builder", "pydantic-graph"),
}


def build(impl: str, workload: str) -> tuple[Callable[[], Any], Callable[[Any], None], dict[str, Any]]:
    """``(call, check, info)`` for one rival; ``info`` names the module, file and version used."""
    builders, module, dist = IMPLS[impl]
    if workload not in builders:
        raise SystemExit(f"--impl {impl} implements {sorted(builders)} only, not {workload}")
    call, check = builders[workload]()
    mod = sys.modules[module]
    info = {
        "impl_module": module,
        "impl_file": getattr(mod, "__file__", None),
        "impl_version": importlib.metadata.version(dist) if dist else f"Python {sys.version.split()[0]}",
    }
    return call, check, info
