#!/usr/bin/env python
"""The lean-runtime figures of issue 31, plait and LangGraph side by side in one run.

Workloads (the same code for both; ``--impl`` picks the package it imports, ``plait.*`` or
``langgraph.*``):

* ``stream`` - ``MessagesState``, one node calling a chat model that streams a 10-token reply
  (a ``BaseChatModel`` whose ``_stream`` yields 10 chunks). Timed in one process, interleaved
  sample by sample: ``invoke``, ``list(stream(stream_mode="messages"))``,
  ``list(stream(stream_mode="updates"))``, and the model alone: ``model.invoke`` plain and with
  a token-streaming callback handler (the model's own token path). Figures: each mode's median
  ÷ ``invoke``'s (targets: messages ≤ 2.5×, updates ≤ 1.5×).
* ``fanout`` - a router sends 64 ``Send("work", ...)``; ``work`` appends to an ``operator.add``
  list; ``join`` runs after them. µs per ``invoke`` (target: ≥ 20× LangGraph in every round).
* ``async`` - an echo chat graph (``MessagesState``, one async node) on ``InMemorySaver``, each
  run a fresh thread, in batches of 1000 runs, sequential and concurrent batches interleaved:
  ``sequential`` is the median run of the sequential batches (target: ≥ 3× LangGraph);
  ``sequential_batch`` and ``concurrent_batch`` are µs per run over a whole batch, one ``ainvoke``
  after another or all 1000 at once (``asyncio.gather``) (target: concurrent ≤ 2× sequential).
* ``interrupt`` - a node asks ``interrupt("name?")`` on ``InMemorySaver``; one sample is the
  ``invoke`` that pauses plus the ``invoke(Command(resume=...))`` that ends the run, on a fresh
  thread. µs per pair (target: ≥ 10× LangGraph).

Method: each (workload, implementation, round) is a fresh subprocess; rounds alternate which
implementation goes first. Within a round every sample is timed alone with
``time.perf_counter_ns`` after a checked first run, a warm-up and ``gc.collect()``; a round's
figure is its median. Reported: the median over rounds and each round's figure.

    .venv/bin/python bench/lean.py --langgraph-python /tmp/lgref/bin/python
    .venv/bin/python bench/lean.py --only stream --rounds 3
    .venv/bin/python bench/lean.py --worker stream --impl plait   # one round, one JSON line
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import operator
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypedDict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WORKLOADS = ("stream", "fanout", "async", "interrupt")
TOKENS = [f"tok{i} " for i in range(10)]
FAN = 64


class FanState(TypedDict):
    items: list[int]
    results: Annotated[list[int], operator.add]


class AskState(TypedDict):
    name: str


def _api(impl: str) -> tuple[Any, Any, Any]:
    """``(graph, types, checkpoint.memory)`` modules of ``impl``."""
    if impl not in ("plait", "langgraph"):
        raise SystemExit(f"unknown --impl {impl!r}")
    mods = [importlib.import_module(f"{impl}.{name}") for name in ("graph", "types", "checkpoint.memory")]
    assert mods[0].StateGraph.__module__.startswith(impl + "."), mods[0].StateGraph.__module__  # noqa: S101
    return mods[0], mods[1], mods[2]


def _timed(fn: Callable[[], Any]) -> int:
    started = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - started


def _model() -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    class TenTokens(BaseChatModel):
        """Replies with the same 10 tokens; streams them one chunk each."""

        @property
        def _llm_type(self) -> str:
            return "ten-tokens"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("".join(TOKENS)))])

        def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            for token in TOKENS:
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
                if run_manager is not None:
                    run_manager.on_llm_new_token(token, chunk=chunk)
                yield chunk

    return TenTokens()


def _streaming_handler() -> Any:
    """A callback handler that makes chat models stream their tokens (as a ``messages`` run's does)."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Tap(BaseCallbackHandler):
        def tap_output_iter(self, run_id: Any, output: Iterator[Any]) -> Iterator[Any]:
            return output

        def tap_output_aiter(self, run_id: Any, output: Any) -> Any:
            return output

        def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
            pass

    return Tap()


def work_stream(impl: str, samples: int) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    g, _, _ = _api(impl)
    model = _model()

    def chat(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = g.StateGraph(g.MessagesState).add_node("chat", chat).add_edge(g.START, "chat").compile()
    inp = {"messages": [HumanMessage("hi", id="h")]}
    msgs = inp["messages"]
    tap = {"callbacks": [_streaming_handler()]}
    cases: dict[str, Callable[[], Any]] = {
        "invoke": lambda: graph.invoke(inp),
        "messages": lambda: list(graph.stream(inp, stream_mode="messages")),
        "updates": lambda: list(graph.stream(inp, stream_mode="updates")),
        "model": lambda: model.invoke(msgs),
        "model_tokens": lambda: model.invoke(msgs, tap),
    }
    out = graph.invoke(inp)
    assert out["messages"][-1].content == "".join(TOKENS), out  # noqa: S101
    tokens = [e for e in cases["messages"]() if getattr(e[0], "content", None) in TOKENS]
    assert len(tokens) == len(TOKENS), tokens  # noqa: S101
    return _interleaved(cases, samples, warm=samples // 10, unit=1e3)


def _interleaved(cases: dict[str, Callable[[], Any]], samples: int, warm: int, unit: float) -> dict[str, Any]:
    """Each case timed ``samples`` times, the cases taking turns (rotating who goes first)."""
    names = list(cases)
    for _ in range(warm):
        for name in names:
            cases[name]()
    gc.collect()
    times: dict[str, list[int]] = {name: [] for name in names}
    for i in range(samples):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(_timed(cases[name]))
    return {name: statistics.median(values) / unit for name, values in times.items()}


def work_fanout(impl: str, samples: int) -> dict[str, Any]:
    g, types, _ = _api(impl)

    def fan(state: FanState) -> list[Any]:
        return [types.Send("work", {"item": i}) for i in state["items"]]

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        return {"results": [arg["item"] * 2]}

    def join(state: FanState) -> dict[str, list[int]]:
        return {"results": [-1]}

    b = g.StateGraph(FanState)
    b.add_node("work", work)
    b.add_node("join", join)
    b.add_conditional_edges(g.START, fan, ["work"])
    b.add_edge("work", "join")
    graph = b.compile()
    inp = {"items": list(range(FAN)), "results": []}
    out = graph.invoke(inp)
    assert sorted(out["results"][:-1]) == [2 * i for i in range(FAN)] and out["results"][-1] == -1, out  # noqa: S101
    return _interleaved({"invoke": lambda: graph.invoke(inp)}, samples, warm=samples // 10, unit=1e3)


def _chat_graph(impl: str) -> Any:
    from langchain_core.messages import AIMessage

    g, _, memory = _api(impl)

    async def echo(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("echo: " + str(state["messages"][-1].content))]}

    builder = g.StateGraph(g.MessagesState).add_node("echo", echo).add_edge(g.START, "echo")
    return builder.compile(checkpointer=memory.InMemorySaver())


def work_async(impl: str, samples: int) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    runs = samples

    async def batch(concurrent: bool) -> tuple[float, float]:
        """µs per run over the batch, and (sequential) the median run's µs."""
        graph = _chat_graph(impl)
        inputs = [
            ({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": f"t{i}"}})
            for i in range(runs)
        ]
        gc.collect()
        started = time.perf_counter_ns()
        single: list[int] = []
        if concurrent:
            outs = await asyncio.gather(*(graph.ainvoke(inp, cfg) for inp, cfg in inputs))
        else:
            outs = []
            for inp, cfg in inputs:
                begun = time.perf_counter_ns()
                outs.append(await graph.ainvoke(inp, cfg))
                single.append(time.perf_counter_ns() - begun)
        elapsed = time.perf_counter_ns() - started
        assert all(o["messages"][-1].content == "echo: hi" for o in outs), outs[:1]  # noqa: S101
        return elapsed / runs / 1e3, statistics.median(single) / 1e3 if single else 0.0

    async def main() -> dict[str, Any]:
        await batch(False)  # warm-up
        seq: list[float] = []
        seq_run: list[float] = []
        conc: list[float] = []
        for i in range(3):
            for concurrent in (False, True) if i % 2 == 0 else (True, False):
                per_run, median_run = await batch(concurrent)
                (conc if concurrent else seq).append(per_run)
                if not concurrent:
                    seq_run.append(median_run)
        return {
            "sequential": statistics.median(seq_run),
            "sequential_batch": statistics.median(seq),
            "concurrent_batch": statistics.median(conc),
        }

    return asyncio.run(main())


def work_interrupt(impl: str, samples: int) -> dict[str, Any]:
    g, types, memory = _api(impl)

    def ask(state: AskState) -> dict[str, str]:
        return {"name": types.interrupt("name?")}

    graph = (
        g.StateGraph(AskState)
        .add_node("ask", ask)
        .add_edge(g.START, "ask")
        .compile(checkpointer=memory.InMemorySaver())
    )
    counter = iter(range(10**9))

    def pair() -> Any:
        cfg = {"configurable": {"thread_id": f"t{next(counter)}"}}
        paused = graph.invoke({"name": ""}, cfg)
        assert "__interrupt__" in paused, paused  # noqa: S101
        return graph.invoke(types.Command(resume="ada"), cfg)

    assert pair() == {"name": "ada"}  # noqa: S101
    return _interleaved({"pair": pair}, samples, warm=samples // 10, unit=1e3)


WORKERS: dict[str, tuple[Callable[[str, int], dict[str, Any]], int]] = {
    "stream": (work_stream, 1000),
    "fanout": (work_fanout, 300),
    "async": (work_async, 1000),
    "interrupt": (work_interrupt, 1000),
}


def run_worker(workload: str, impl: str, python: str, samples: int | None) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("BENCH_ALIAS", None)
    if impl == "plait":
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [python, os.path.abspath(__file__), "--worker", workload, "--impl", impl]
    if samples:
        cmd += ["--samples", str(samples)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{workload}/{impl} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def report(results: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """Markdown lines: per workload and figure, the median over rounds and the rounds' figures."""
    lines = ["| workload | figure | plait | LangGraph | LangGraph ÷ plait |", "|---|---|---|---|---|"]
    for workload, by_impl in results.items():
        plait_rounds, lg_rounds = by_impl.get("plait", []), by_impl.get("langgraph", [])
        figures = list(plait_rounds[0]) if plait_rounds else list(lg_rounds[0])
        derived: list[tuple[str, Callable[[dict[str, Any]], float]]] = [
            (f, lambda r, f=f: r[f]) for f in figures
        ]
        if workload == "stream":
            for f in ("messages", "updates"):
                derived.append((f"{f} ÷ invoke", lambda r, f=f: r[f] / r["invoke"]))
            derived.append(("model tokens ÷ model", lambda r: r["model_tokens"] / r["model"]))
        if workload == "async":
            derived.append(
                ("concurrent ÷ sequential", lambda r: r["concurrent_batch"] / r["sequential_batch"])
            )
        for name, get in derived:
            ratio = "÷" in name
            cells = []
            for rounds in (plait_rounds, lg_rounds):
                values = [get(r) for r in rounds]
                fmt = "{:.2f}" if ratio else "{:.1f}"
                cells.append(
                    f"{fmt.format(statistics.median(values))} [{', '.join(fmt.format(v) for v in values)}]"
                    if values
                    else "-"
                )
            speed = ""
            if not ratio and plait_rounds and lg_rounds:
                per_round = [get(b) / get(a) for a, b in zip(plait_rounds, lg_rounds, strict=True)]
                speed = f"{statistics.median(per_round):.1f}× [{', '.join(f'{v:.1f}' for v in per_round)}]"
            unit = "" if ratio else " µs"
            lines.append(f"| {workload} | {name}{unit} | {cells[0]} | {cells[1]} | {speed} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=WORKLOADS)
    ap.add_argument("--impl", default="plait", choices=("plait", "langgraph"))
    ap.add_argument("--samples", type=int)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--plait-python", default=sys.executable)
    ap.add_argument("--langgraph-python")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.worker:
        fn, default = WORKERS[args.worker]
        print(json.dumps(fn(args.impl, args.samples or default)))
        return
    impls = [("plait", args.plait_python)] + (
        [("langgraph", args.langgraph_python)] if args.langgraph_python else []
    )
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for workload in args.only.split(","):
        by_impl: dict[str, list[dict[str, Any]]] = {impl: [] for impl, _ in impls}
        for r in range(args.rounds):
            for impl, python in impls if r % 2 == 0 else impls[::-1]:
                by_impl[impl].append(run_worker(workload, impl, python, args.samples))
                print(f"{workload} round {r + 1} {impl}: {by_impl[impl][-1]}", file=sys.stderr, flush=True)
        results[workload] = by_impl
    print("\n".join(report(results)))
    if not args.langgraph_python:
        print("\nLangGraph skipped: --langgraph-python not given")
    stamp = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg()}
    print(json.dumps({"meta": stamp, "results": results}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": stamp, "results": results}, f)


if __name__ == "__main__":
    main()
