#!/usr/bin/env python
"""Instructions per operation of ``bench/lean.py``'s workloads (callgrind), plait and LangGraph.

Each implementation runs once under ``valgrind --tool=callgrind``: the workloads are set up and
warmed up with collection off, then each one's timed loop runs inside ``operator.call``, and
callgrind collects only there (``--toggle-collect=_operator_call``) and dumps after each
(``--dump-after``). Instruction counts do not move with the machine's load, so they show what a
change does to plait's own work; they leave out waiting (thread hand-overs, the kernel), and
collection follows one thread, so ``messages`` (a step on another thread) is not counted here.

    .venv/bin/python bench/lean_count.py --langgraph-python /tmp/lgref/bin/python   # ~5 min
    .venv/bin/python bench/lean_count.py --only ainvoke,interrupt --ops 20
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import operator
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CASES = ("invoke", "updates", "model", "model_tokens", "fanout", "ainvoke", "interrupt")


def worker(impl: str, ops: int, names: list[str]) -> None:
    """Set every case up, then run each ``ops`` times inside ``operator.call``."""
    sys.path.insert(0, HERE)
    import lean
    from langchain_core.messages import HumanMessage

    g, types, memory = lean._api(impl)
    model = lean._model()

    def chat(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = g.StateGraph(g.MessagesState).add_node("chat", chat).add_edge(g.START, "chat").compile()
    inp = {"messages": [HumanMessage("hi", id="h")]}
    tap = {"callbacks": [lean._streaming_handler()]}

    def fan(state: Any) -> list[Any]:
        return [types.Send("work", {"item": i}) for i in state["items"]]

    fanned = g.StateGraph(lean.FanState)
    fanned.add_node("work", lambda arg: {"results": [arg["item"] * 2]})
    fanned.add_node("join", lambda state: {"results": [-1]})
    fanned.add_conditional_edges(g.START, fan, ["work"])
    fanned.add_edge("work", "join")
    fan_graph = fanned.compile()

    def ask(state: Any) -> dict[str, Any]:
        return {"name": types.interrupt("name?")}

    asked = g.StateGraph(lean.AskState).add_node("ask", ask).add_edge(g.START, "ask")
    ask_graph = asked.compile(checkpointer=memory.InMemorySaver())
    echo_graph = lean._chat_graph(impl)
    threads = iter(range(10**9))
    loop = asyncio.new_event_loop()

    def pair() -> None:
        cfg = {"configurable": {"thread_id": f"t{next(threads)}"}}
        ask_graph.invoke({"name": ""}, cfg)
        ask_graph.invoke(types.Command(resume="ada"), cfg)

    async def turns(count: int) -> None:
        for _ in range(count):
            cfg = {"configurable": {"thread_id": f"a{next(threads)}"}}
            await echo_graph.ainvoke({"messages": [HumanMessage("hi")]}, cfg)

    cases: dict[str, Callable[[int], Any]] = {
        "invoke": lambda k: [graph.invoke(inp) for _ in range(k)],
        "updates": lambda k: [list(graph.stream(inp, stream_mode="updates")) for _ in range(k)],
        "model": lambda k: [model.invoke(inp["messages"]) for _ in range(k)],
        "model_tokens": lambda k: [model.invoke(inp["messages"], tap) for _ in range(k)],
        "fanout": lambda k: [
            fan_graph.invoke({"items": list(range(lean.FAN)), "results": []}) for _ in range(k)
        ],
        "ainvoke": lambda k: loop.run_until_complete(turns(k)),
        "interrupt": lambda k: [pair() for _ in range(k)],
    }
    for name in names:
        run = cases[name]
        run(20)  # warm-up, not collected
        operator.call(run, ops)


def count(python: str, impl: str, ops: int, names: list[str]) -> dict[str, float]:
    """Thousands of instructions per operation of each case, for ``impl`` under ``python``."""
    env = dict(os.environ)
    env.pop("BENCH_ALIAS", None)
    if impl == "plait":
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "cg")
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=_operator_call"]
        cmd += [
            "--dump-after=_operator_call",
            f"--callgrind-out-file={out}",
            python,
            os.path.abspath(__file__),
        ]
        cmd += ["--worker", impl, "--ops", str(ops), "--only", ",".join(names)]
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        dumps = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        totals = []
        for path in dumps:
            with open(path) as f:
                found = re.search(r"^totals: (\d+)", f.read(), re.M)
            if found and int(found.group(1)):
                totals.append(int(found.group(1)))
    return {name: total / ops / 1e3 for name, total in zip(names, totals, strict=True)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=("plait", "langgraph"))
    ap.add_argument("--ops", type=int, default=30)
    ap.add_argument("--only", default=",".join(CASES))
    ap.add_argument("--plait-python", default=sys.executable)
    ap.add_argument("--langgraph-python")
    args = ap.parse_args()
    names = args.only.split(",")
    if args.worker:
        worker(args.worker, args.ops, names)
        return
    found = {"plait": count(args.plait_python, "plait", args.ops, names)}
    if args.langgraph_python:
        found["langgraph"] = count(args.langgraph_python, "langgraph", args.ops, names)
    print("| case | plait k instr/op | LangGraph k instr/op | LangGraph ÷ plait |\n|---|---|---|---|")
    for name in names:
        mine, theirs = found["plait"][name], found.get("langgraph", {}).get(name)
        ratio = f"{theirs / mine:.2f}×" if theirs else "-"
        print(
            f"| {name} | {mine:.0f} | {theirs:.0f} | {ratio} |"
            if theirs
            else f"| {name} | {mine:.0f} | - | - |"
        )


if __name__ == "__main__":
    main()
