"""Per-turn cost of a chat thread on PostgreSQL, plait beside LangGraph (W6 of the shared suite, by table name).

The shared suite's W6 reads relation sizes by LangGraph's table names, which plait no longer
uses (its tables are ``plait_*``), so this script runs the same workload for both: a
``MessagesState`` echo graph (``START -> echo -> END``, 200-character messages) on the sync
``PostgresSaver`` (``from_conn_string`` + ``setup()``) in a private schema, ``--turns`` turns on
one thread. Reported per implementation: ms per turn (median of the ``--window`` turns ending at
each ``--report-at`` turn) and the total size of its checkpoint tables at the end.

Each implementation runs in its own process (``--langgraph-python`` for LangGraph, this interpreter
for plait), alternating for ``--runs`` rounds; the medians over rounds are printed side by side
with the ratio, then one JSON line.

    .venv/bin/python bench/postgres_turns.py --langgraph-python /tmp/lgref/bin/python
    .venv/bin/python bench/postgres_turns.py --turns 200 --report-at 10,200 --runs 1     # quick
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
from typing import Any

PG_DSN = os.environ.get("PLAIT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
TABLES = {
    "plait": ("plait_checkpoints", "plait_checkpoint_blobs", "plait_checkpoint_writes"),
    "langgraph": ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
}


def _connect(dsn: str) -> Any:
    """An autocommit connection, retried for a minute (a shared server may be out of connections)."""
    import psycopg

    for attempt in range(60):
        try:
            return psycopg.connect(dsn, autocommit=True)
        except psycopg.OperationalError:
            if attempt == 59:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def worker(impl: str, dsn: str, turns: int, window: int, report_at: list[int]) -> dict[str, Any]:
    """One run in this process: ``impl`` is the package to import (``plait`` or ``langgraph``)."""
    from langchain_core.messages import AIMessage, HumanMessage

    graph_mod = __import__(f"{impl}.graph", fromlist=["StateGraph"])
    saver_mod = __import__(f"{impl}.checkpoint.postgres", fromlist=["PostgresSaver"])

    def echo(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(("echo: " + state["messages"][-1].content)[:200])]}

    builder = graph_mod.StateGraph(graph_mod.MessagesState)
    builder.add_node("echo", echo)
    builder.add_edge(graph_mod.START, "echo")
    builder.add_edge("echo", graph_mod.END)
    config = {"configurable": {"thread_id": "w6"}}
    times: list[float] = []
    with saver_mod.PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        app = builder.compile(checkpointer=saver)
        for i in range(turns):
            message = HumanMessage((f"{i:06d} " + "lorem ipsum " * 20)[:200])
            started = time.perf_counter()
            app.invoke({"messages": [message]}, config)
            times.append(time.perf_counter() - started)

    with _connect(dsn) as conn:
        size = sum(
            conn.execute("SELECT pg_total_relation_size(to_regclass(%s))", [t]).fetchone()[0] or 0  # type: ignore[index]
            for t in TABLES[impl]
        )
    return {
        "ms_per_turn": {str(n): statistics.median(times[max(0, n - window) : n]) * 1e3 for n in report_at},
        "table_bytes": size,
    }


def _schema() -> tuple[str, str]:

    schema = f"bench_turns_{uuid.uuid4().hex[:8]}"
    with _connect(PG_DSN) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema, f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options=-csearch_path%3D{schema}"


def _drop(schema: str) -> None:

    with _connect(PG_DSN) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _run(python: str, impl: str, args: argparse.Namespace) -> dict[str, Any]:
    schema, dsn = _schema()
    try:
        done = subprocess.run(
            [
                python,
                __file__,
                "--worker",
                impl,
                dsn,
                "--turns",
                str(args.turns),
                "--window",
                str(args.window),
                "--report-at",
                args.report_at,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=3600,
        )
        if done.returncode:
            raise SystemExit(f"{impl} run failed:\n{done.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result
    finally:
        _drop(schema)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--langgraph-python", default="/tmp/lgref/bin/python")
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--report-at", default="10,100,1000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--worker", nargs=2, metavar=("IMPL", "DSN"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    report_at = [int(n) for n in args.report_at.split(",")]
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.turns, args.window, report_at)))
        return
    impls = {"plait": sys.executable}
    if os.path.exists(args.langgraph_python):
        impls["langgraph"] = args.langgraph_python
    else:
        print(f"LangGraph skipped: {args.langgraph_python} does not exist", file=sys.stderr)
    runs: dict[str, list[dict[str, Any]]] = {impl: [] for impl in impls}
    load = [os.getloadavg()[0]]
    for _ in range(args.runs):
        for impl, python in impls.items():
            runs[impl].append(_run(python, impl, args))
            load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {"load_1min": load, "turns": args.turns}
    for impl, results in runs.items():
        summary[impl] = {
            "ms_per_turn": {
                str(n): statistics.median(r["ms_per_turn"][str(n)] for r in results) for n in report_at
            },
            "table_bytes": statistics.median(r["table_bytes"] for r in results),
            "runs": results,
        }
    print(
        f"{'turn':>6} " + " ".join(f"{impl + ' ms':>14}" for impl in impls) + "   langgraph/plait",
        file=sys.stderr,
    )
    for n in report_at:
        cells = [summary[impl]["ms_per_turn"][str(n)] for impl in impls]
        ratio = f"{cells[1] / cells[0]:.1f}x" if len(cells) == 2 else "-"
        print(f"{n:>6} " + " ".join(f"{c:>14.2f}" for c in cells) + f"   {ratio:>6}", file=sys.stderr)
    print(
        "table bytes: " + ", ".join(f"{impl} {summary[impl]['table_bytes']:,}" for impl in impls),
        file=sys.stderr,
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
