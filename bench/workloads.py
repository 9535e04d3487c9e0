#!/usr/bin/env python
"""Worker: time ONE workload against ONE implementation and print one JSON line.

Run by ``bench/run.py`` in a fresh subprocess per (workload, implementation,
run); usable alone too::

    python bench/workloads.py W1 --impl plait
    /path/to/langgraph-venv/bin/python bench/workloads.py W3 --impl langgraph

``--impl plait`` imports ``plait.graph`` (never an alias); ``--impl langgraph``
imports ``langgraph.graph``.  Stdlib + the implementation only.  ``--impl
floor|burr|pydantic-graph`` runs W1 and W3 from ``bench/rivals.py`` instead
(plain Python, Apache Burr, pydantic-graph), timed the same way.

Workloads (same shapes as /work/shared/bench w1..w3):

* W1 - START -> a -> b -> c -> END, TypedDict with one ``str`` field, no
  checkpointer.  Unit: microseconds per invoke.
* W2 - START -> 64 parallel nodes writing ``Annotated[list, operator.add]`` ->
  ``join`` (``add_edge([...], "join")``) -> END.  Unit: milliseconds per invoke.
* W3 - one node ``inc`` + conditional self-edge until ``counter == 500``.
  Unit: node steps per second (``target / invoke time``).
* W4 - (not in the shared suite) an echo chat graph (``MessagesState``,
  ``START -> echo -> END``) on the implementation's ``InMemorySaver``, run
  for 1000 turns (3000 checkpoints, 2000 messages at the head) before
  timing; each timed call lists the whole history with values,
  ``list(graph.get_state_history(config))``. Unit: milliseconds per listing.

Every invoke is timed on its own with ``time.perf_counter_ns`` after a warm-up
and a ``gc.collect()``; the raw samples (ns) are returned so the driver can
pool them across runs.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import json
import operator
import os
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

# name -> (default invokes, default warm-up, quick invokes, quick warm-up)
DEFAULTS: dict[str, tuple[int, int, int, int]] = {
    "W1": (3000, 300, 300, 30),
    "W2": (300, 30, 30, 5),
    "W3": (30, 3, 5, 1),
    "W4": (10, 1, 2, 1),
}
W4_TURNS = 1000  # 3 checkpoints per turn (input, __start__, echo)
GRAPH_IMPLS = ("plait", "langgraph")  # LangGraph-shaped StateGraph API: every workload
RIVAL_IMPLS = ("floor", "burr", "pydantic-graph")  # bench/rivals.py: W1 and W3 only


class W1State(TypedDict):
    value: str


class W2State(TypedDict):
    log: Annotated[list[str], operator.add]


class W3State(TypedDict):
    counter: int


def _graph_api(impl: str) -> Any:
    """The ``graph`` module of the implementation (``plait.graph`` or ``langgraph.graph``)."""
    if impl not in GRAPH_IMPLS:
        raise SystemExit(f"unknown --impl {impl!r}")
    return importlib.import_module(f"{impl}.graph")


def build_w1(g: Any) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    def node_a(state: W1State) -> dict[str, str]:
        return {"value": state["value"] + "a"}

    def node_b(state: W1State) -> dict[str, str]:
        return {"value": state["value"] + "b"}

    def node_c(state: W1State) -> dict[str, str]:
        return {"value": state["value"] + "c"}

    b = g.StateGraph(W1State)
    for name, fn in (("a", node_a), ("b", node_b), ("c", node_c)):
        b.add_node(name, fn)
    b.add_edge(g.START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", g.END)
    graph = b.compile()
    inp = {"value": "x"}

    def check(out: Any) -> None:
        assert out == {"value": "xabc"}, out

    return (lambda: graph.invoke(inp)), check


def build_w2(g: Any, width: int = 64) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    def make_node(name: str) -> Callable[[W2State], dict[str, list[str]]]:
        def node(state: W2State) -> dict[str, list[str]]:
            return {"log": [name]}

        node.__name__ = name
        return node

    def join(state: W2State) -> dict[str, list[str]]:
        return {"log": ["join"]}

    b = g.StateGraph(W2State)
    names = [f"n{i:03d}" for i in range(width)]
    for n in names:
        b.add_node(n, make_node(n))
        b.add_edge(g.START, n)
    b.add_node("join", join)
    b.add_edge(names, "join")
    b.add_edge("join", g.END)
    graph = b.compile()
    inp: dict[str, list[str]] = {"log": []}

    def check(out: Any) -> None:
        log = out["log"]
        assert len(log) == width + 1 and sorted(log[:-1]) == names and log[-1] == "join", log

    return (lambda: graph.invoke(inp)), check


def build_w3(g: Any, target: int = 500) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    def inc(state: W3State) -> dict[str, int]:
        return {"counter": state["counter"] + 1}

    def route(state: W3State) -> str:
        return g.END if state["counter"] >= target else "inc"

    b = g.StateGraph(W3State)
    b.add_node("inc", inc)
    b.add_edge(g.START, "inc")
    b.add_conditional_edges("inc", route, ["inc", g.END])
    graph = b.compile()
    inp = {"counter": 0}
    cfg = {"recursion_limit": 2 * target + 100}

    def check(out: Any) -> None:
        assert out == {"counter": target}, out

    return (lambda: graph.invoke(inp, cfg)), check


def build_w4(g: Any, turns: int = W4_TURNS) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    from langchain_core.messages import AIMessage, HumanMessage

    memory = importlib.import_module(g.__name__.rsplit(".", 1)[0] + ".checkpoint.memory")
    saver = getattr(memory, "InMemorySaver", None) or memory.MemorySaver

    def echo(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("echo: " + state["messages"][-1].content)]}

    b = g.StateGraph(g.MessagesState)
    b.add_node("echo", echo)
    b.add_edge(g.START, "echo")
    b.add_edge("echo", g.END)
    graph = b.compile(checkpointer=saver())
    cfg = {"configurable": {"thread_id": "w4"}}
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(f"q{i}")]}, cfg)

    def check(history: Any) -> None:
        assert len(history) == 3 * turns, len(history)
        assert [m.content for m in history[0].values["messages"][-2:]] == [
            f"q{turns - 1}",
            f"echo: q{turns - 1}",
        ]
        lengths = [len(s.values.get("messages", ())) for s in history]
        assert lengths[0] == 2 * turns and lengths == sorted(lengths, reverse=True), lengths[:6]
        assert [m.content for m in history[len(history) // 2].values["messages"][:2]] == ["q0", "echo: q0"]

    return (lambda: list(graph.get_state_history(cfg))), check


BUILDERS = {"W1": build_w1, "W2": build_w2, "W3": build_w3, "W4": build_w4}


def measure(call: Callable[[], Any], invokes: int, warmup: int) -> list[int]:
    """Warm up, collect garbage, then time each call on its own (ns)."""
    for _ in range(warmup):
        call()
    gc.collect()
    pc = time.perf_counter_ns
    samples: list[int] = []
    append = samples.append
    for _ in range(invokes):
        t0 = pc()
        call()
        append(pc() - t0)
    return samples


def timer_overhead_ns(n: int = 2000) -> int:
    """Median ns that timing a no-op call on its own adds to every sample (not subtracted)."""
    pc = time.perf_counter_ns
    noop: Callable[[], None] = lambda: None  # noqa: E731
    samples = []
    for _ in range(n):
        t0 = pc()
        noop()
        samples.append(pc() - t0)
    return sorted(samples)[n // 2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=sorted(BUILDERS))
    ap.add_argument("--impl", default="plait", choices=[*GRAPH_IMPLS, *RIVAL_IMPLS])
    ap.add_argument("--invokes", type=int, default=None, help="timed invokes (default per workload)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed invokes first (default per workload)")
    ap.add_argument("--quick", action="store_true", help="tiny sample counts (smoke test)")
    a = ap.parse_args(argv)

    d_inv, d_warm, q_inv, q_warm = DEFAULTS[a.workload]
    invokes = a.invokes if a.invokes is not None else (q_inv if a.quick else d_inv)
    warmup = a.warmup if a.warmup is not None else (q_warm if a.quick else d_warm)

    if a.impl in GRAPH_IMPLS:
        g = _graph_api(a.impl)
        call, check = BUILDERS[a.workload](g)
        top = sys.modules[a.impl]
        version = getattr(top, "__version__", None)
        if version is None:
            try:
                version = importlib.metadata.version(a.impl)
            except Exception:  # noqa: BLE001 - informational only
                version = None
        info = {
            "impl_module": g.StateGraph.__module__,
            "impl_file": getattr(top, "__file__", None),
            "impl_version": version,
        }
    else:
        import rivals  # bench/rivals.py: the floor, Burr, pydantic-graph (W1, W3 only)

        call, check, info = rivals.build(a.impl, a.workload)
    check(call())
    samples = measure(call, invokes, warmup)
    print(
        json.dumps(
            {
                "workload": a.workload,
                "impl": a.impl,
                **info,
                "python": sys.version.split()[0],
                "executable": sys.executable,
                "invokes": invokes,
                "warmup": warmup,
                "samples_ns": samples,
                "timer_overhead_ns": timer_overhead_ns(),
                "loadavg_end": os.getloadavg(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
