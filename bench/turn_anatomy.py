"""Where a chat turn's time goes on PostgreSQL: client CPU, each round trip, the server's functions.

Runs the echo chat graph of ``postgres_turns.py`` (``MessagesState``, ``START -> echo -> END``,
200-character messages) on the sync ``PostgresSaver`` in a private schema, ``--turns`` turns on
one thread, in ``--runs`` fresh processes; and, as the floor, the same turns on ``InMemorySaver``
(the graph alone). Per turn it records the wall time, the CPU time of the calling thread
(``time.thread_time``) and the time spent waiting in each of the turn's two statements (psycopg's
``Connection.wait``, labelled by the statement sent: ``plait_begin``, the lease and the head; the
rest, the checkpoints and the release). The server's own execution time per function comes from
``pg_stat_user_functions``: the worker's connections set ``track_functions = pl`` where the role
may (a superuser's; otherwise the script says so and prints no server figures). Wrapping
``Connection.wait`` is for measuring only.

Prints the medians over runs of each figure for the first ``--window`` turns of a process and for
the last ``--window`` turns, then one JSON line.

    .venv/bin/python bench/turn_anatomy.py
    .venv/bin/python bench/turn_anatomy.py --turns 1000 --runs 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

PG_DSN = os.environ.get("PLAIT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
FIGURES = ("wall", "cpu", "wait_begin", "wait_put")


def _timed_waits(label: list[str], waits: dict[str, list[float]]) -> None:
    """Record each ``Connection.wait`` under the statement being sent (for measuring only)."""
    import psycopg

    wait, execute = psycopg.Connection.wait, psycopg.ClientCursor.execute

    def timed_wait(self: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return wait(self, gen, *args, **kwargs)
        finally:
            waits[label[0]][-1] += time.perf_counter() - started

    def labelled(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        label[0] = "wait_begin" if "plait_begin(" in str(query)[:40] else "wait_put"
        return execute(self, query, *args, **kwargs)

    psycopg.Connection.wait = timed_wait  # type: ignore[method-assign]
    psycopg.ClientCursor.execute = labelled  # type: ignore[method-assign]


def worker(kind: str, dsn: str, turns: int) -> dict[str, Any]:
    """One process: ``kind`` is ``postgres`` or ``memory``."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableConfig

    from plait.checkpoint.memory import InMemorySaver
    from plait.checkpoint.postgres import PostgresSaver
    from plait.graph import END, START, MessagesState, StateGraph

    def echo(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(("echo: " + str(state["messages"][-1].content))[:200])]}

    graph = StateGraph(MessagesState).add_node("echo", echo).add_edge(START, "echo").add_edge("echo", END)
    label = ["wait_put"]
    figures: dict[str, list[float]] = {name: [] for name in FIGURES}
    if kind == "postgres":
        _timed_waits(label, figures)
    opened: Callable[[], AbstractContextManager[Any]] = (
        (lambda: PostgresSaver.from_conn_string(dsn))
        if kind == "postgres"
        else (lambda: nullcontext(InMemorySaver()))
    )
    config: RunnableConfig = {"configurable": {"thread_id": "anatomy"}}
    with opened() as saver:
        app = graph.compile(checkpointer=saver)
        for i in range(turns):
            message = HumanMessage((f"{i:06d} " + "lorem ipsum " * 20)[:200])
            figures["wait_begin"].append(0.0)
            figures["wait_put"].append(0.0)
            wall, cpu = time.perf_counter(), time.thread_time()
            app.invoke({"messages": [message]}, config)
            figures["cpu"].append(time.thread_time() - cpu)
            figures["wall"].append(time.perf_counter() - wall)
    return {name: [round(v * 1e3, 4) for v in values] for name, values in figures.items()}


def _server_times(schema: str, turns: int) -> dict[str, float]:
    """ms per turn in each of plait's functions, as the server counted them (empty: not counted)."""
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        for _ in range(20):  # a backend reports its counts as it exits
            rows = conn.execute(
                "SELECT funcname, total_time FROM pg_stat_user_functions WHERE schemaname = %s", [schema]
            ).fetchall()
            if rows:
                return {name: round(total / turns, 4) for name, total in rows}
            time.sleep(0.1)
    return {}


def _may_count() -> bool:
    """Whether this role may set ``track_functions`` (a superuser, or one granted it)."""
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        try:
            conn.execute("SET track_functions = 'pl'")
        except psycopg.errors.InsufficientPrivilege:
            return False
    return True


def _run(kind: str, args: argparse.Namespace, count: bool) -> dict[str, Any]:
    import psycopg
    from psycopg import sql

    schema = f"bench_anatomy_{uuid.uuid4().hex[:8]}"
    options = f"-csearch_path%3D{schema}" + ("%20-ctrack_functions%3Dpl" if count else "")
    dsn = f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options={options}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        command = [sys.executable, __file__, "--worker", kind, dsn, "--turns", str(args.turns)]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=3600)
        if done.returncode:
            raise SystemExit(f"{kind} run failed:\n{done.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        result["server"] = _server_times(schema, args.turns) if kind == "postgres" and count else {}
        return result
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _window(runs: list[dict[str, Any]], name: str, part: slice) -> float:
    """The median over runs of each run's median over the turns in ``part``."""
    return float(statistics.median(statistics.median(run[name][part]) for run in runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "DSN"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.turns)))
        return
    if args.turns < 2 * args.window:
        ap.error("--turns must be at least twice --window")
    runs: dict[str, list[dict[str, Any]]] = {"postgres": [], "memory": []}
    count = _may_count()
    for _ in range(args.runs):
        for kind, results in runs.items():
            results.append(_run(kind, args, count))
    parts = {"first": slice(0, args.window), "last": slice(-args.window, None)}
    summary: dict[str, Any] = {"turns": args.turns, "window": args.window, "runs": args.runs}
    for kind, results in runs.items():
        summary[kind] = {
            where: {name: round(_window(results, name, part), 3) for name in FIGURES}
            for where, part in parts.items()
        }
    server = [run["server"] for run in runs["postgres"] if run["server"]]
    summary["server_ms_per_turn"] = (
        {name: round(statistics.median(s.get(name, 0.0) for s in server), 3) for name in server[0]}
        if server
        else {}
    )
    first, last = f"turns 1-{args.window}", f"last {args.window} of {args.turns}"
    print(
        f"{'ms per turn (median of ' + str(args.runs) + ' processes)':<44}{first:>14}{last:>18}",
        file=sys.stderr,
    )
    rows = [
        ("PostgresSaver: wall", "postgres", "wall"),
        ("  client CPU", "postgres", "cpu"),
        ("  waiting for plait_begin (lease, head)", "postgres", "wait_begin"),
        ("  waiting for the checkpoints and release", "postgres", "wait_put"),
        ("InMemorySaver (the graph alone): wall", "memory", "wall"),
    ]
    for title, kind, name in rows:
        print(
            f"{title:<44}{summary[kind]['first'][name]:>14.2f}{summary[kind]['last'][name]:>18.2f}",
            file=sys.stderr,
        )
    if summary["server_ms_per_turn"]:
        cells = ", ".join(f"{name} {ms:.3f}" for name, ms in sorted(summary["server_ms_per_turn"].items()))
        print(f"server execution, ms per turn (whole run): {cells}", file=sys.stderr)
    else:
        print("server execution: not counted (this role may not set track_functions)", file=sys.stderr)
    print(
        "(the waits include psycopg's own work on each answer, which the client CPU counts too)",
        file=sys.stderr,
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
