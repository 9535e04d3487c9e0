"""Child process for the multi-process tests: runs graphs against a shared saver.

Usage: ``python _child.py TARGET MODE THREAD [ARGS...]`` where TARGET is
``sqlite:<path>`` or ``postgres:<dsn>`` and MODE is one of:

* ``turns N TAG [GO_FILE]``: N chat turns (human ids ``TAG-k``), printing ``TURN TAG-k`` after each returns;
  waits for GO_FILE to exist first, if given; N = 0 means forever.
* ``hold SECONDS [GATE_FILE]``: one run whose node prints ``STARTED`` then sleeps, or (GATE_FILE
  given) waits until GATE_FILE exists (SECONDS at most).
* ``fanout COUNT_DIR``: a step with parallel nodes ``a`` (succeeds) and ``b`` (fails unless COUNT_DIR/ok exists).
* ``prune STOP_FILE [READY_FILE]``: makes READY_FILE, prunes the thread (keep_last 1 to 3) in a loop
  until STOP_FILE exists, then once more (keep_last 3), printing ``PRUNED n`` totals at the end.

Environment: ``LEASE_TTL`` (seconds, default 30).
"""

from __future__ import annotations

import operator
import os
import random
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage
from typing_extensions import TypedDict

from plait.graph import END, START, MessagesState, StateGraph


@contextmanager
def open_saver(target: str, ttl: float | None = None) -> Iterator[Any]:
    """The saver ``target`` names; ``ttl`` defaults to ``$LEASE_TTL`` or 30 s."""
    ttl = ttl if ttl is not None else float(os.environ.get("LEASE_TTL", "30"))
    kind, _, where = target.partition(":")
    if kind == "sqlite":
        from plait.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(where, lease_ttl=ttl) as saver:
            yield saver
    else:
        from plait.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(where, pool_size=2, lease_ttl=ttl) as saver:
            yield saver


def chat_graph(saver: Any, pause: float = 0.0, gate: str | None = None) -> Any:
    """Echo chat: each AI message repeats the human message before it (after ``pause`` seconds, or
    once the file ``gate`` exists, ``pause`` seconds at most)."""

    def echo(state: MessagesState) -> dict[str, Any]:
        if pause:
            print("STARTED", flush=True)
            deadline = time.monotonic() + pause
            while (gate is None or not os.path.exists(gate)) and time.monotonic() < deadline:
                time.sleep(0.01 if gate else max(0.0, deadline - time.monotonic()))
        last = state["messages"][-1]
        return {"messages": [AIMessage(f"echo: {last.content}", id=f"ai-{last.id}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("echo", echo)
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    return builder.compile(checkpointer=saver)


class FanState(TypedDict):
    log: Annotated[list[str], operator.add]


def fanout_graph(saver: Any, count_dir: Path) -> Any:
    """Two parallel nodes: ``a`` finishes at once; ``b`` fails later unless ``count_dir/ok`` exists."""

    def a(state: FanState) -> dict[str, Any]:
        with open(count_dir / "a.calls", "a") as f:
            f.write("a\n")
        return {"log": ["a"]}

    def b(state: FanState) -> dict[str, Any]:
        with open(count_dir / "b.calls", "a") as f:
            f.write("b\n")
        time.sleep(0.3)
        if not (count_dir / "ok").exists():
            raise RuntimeError("b failed on purpose")
        return {"log": ["b"]}

    builder = StateGraph(FanState)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.add_edge("a", END)
    builder.add_edge("b", END)
    return builder.compile(checkpointer=saver)


def run_turns(saver: Any, config: dict[str, Any], count: int, tag: str, go: str | None) -> None:
    """Chat turns, printing each one after ``invoke`` returns."""
    graph = chat_graph(saver)
    while go and not os.path.exists(go):
        time.sleep(0.005)
    k = 0
    while count == 0 or k < count:
        graph.invoke({"messages": [HumanMessage(f"{tag} says {k}", id=f"{tag}-{k}")]}, config)
        print(f"TURN {tag}-{k}", flush=True)
        k += 1


def main(argv: list[str]) -> int:
    """Entry point (see the module docstring)."""
    target, mode, thread = argv[:3]
    config = {"configurable": {"thread_id": thread}}
    with open_saver(target) as saver:
        if mode == "turns":
            run_turns(saver, config, int(argv[3]), argv[4], argv[5] if len(argv) > 5 else None)
        elif mode == "hold":
            chat_graph(saver, float(argv[3]), argv[4] if len(argv) > 4 else None).invoke(
                {"messages": [HumanMessage("hold", id="hold")]}, config
            )
            print("DONE", flush=True)
        elif mode == "prune":
            total = rounds = 0
            rng = random.Random(thread)
            if len(argv) > 4:
                Path(argv[4]).touch()  # pruning from now on
            while not os.path.exists(argv[3]):
                total += saver.prune(thread, keep_last=rng.randint(1, 3))
                rounds += 1
                time.sleep(rng.random() * 0.01)
            total += saver.prune(thread, keep_last=3)  # one more, begun after STOP_FILE was made
            print(f"PRUNED {total} in {rounds + 1}", flush=True)
        elif mode == "fanout":
            count_dir = Path(argv[3])
            try:
                out = fanout_graph(saver, count_dir).invoke(
                    {"log": []} if argv[4] == "start" else None, config
                )
            except RuntimeError as exc:
                print(f"FAILED {exc}", flush=True)
                return 3
            print("RESULT " + ",".join(sorted(out["log"])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
