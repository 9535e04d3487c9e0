"""Cold read of a long conversation: ``get_tuple`` in a fresh process vs building its messages.

Writes a thread of ``--turns`` echo turns (2 messages each: 2000 messages by default) with plait's
SqliteSaver (a file) and PostgresSaver (a private schema), untimed. Then, for each backend and
``--runs`` times, a **fresh process** opens the saver, reads another thread once (connection and
setup out of the way), times ``get_tuple`` of the long thread (the cold read), and times building
the same messages from plain values (``cls(content=..., id=...)``) in that process: the floor for
any reader. Both timed parts start right after a full garbage collection (``gc.collect()``), so
neither pays for objects the other left behind (plait pauses the collector while it rebuilds a
list; the objects are then collected with the next collection, after the timed read). Prints each run and the median ratio cold / floor per backend, and one JSON line.

    .venv/bin/python bench/cold_read.py                      # both backends, 5 fresh processes each
    .venv/bin/python bench/cold_read.py --backends sqlite --turns 1000 --runs 9
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

PG_DSN = os.environ.get("PLAIT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
THREAD = {"configurable": {"thread_id": "long"}}


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


def _saver(backend: str, target: str) -> Any:
    if backend == "sqlite":
        from plait.checkpoint.sqlite import SqliteSaver

        return SqliteSaver.from_conn_string(target)
    from plait.checkpoint.postgres import PostgresSaver

    return PostgresSaver.from_conn_string(target)


def write(backend: str, target: str, turns: int) -> None:
    """The long thread: ``turns`` echo turns of 200-character messages."""
    from langchain_core.messages import AIMessage, HumanMessage

    from plait.graph import END, START, MessagesState, StateGraph

    def echo(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(("echo: " + state["messages"][-1].content)[:200])]}

    graph = StateGraph(MessagesState).add_node("echo", echo).add_edge(START, "echo").add_edge("echo", END)
    with _saver(backend, target) as saver:
        app = graph.compile(checkpointer=saver)
        for i in range(turns):
            app.invoke({"messages": [HumanMessage(f"{i:06d} " + "x" * 193)]}, THREAD)


def read(backend: str, target: str) -> dict[str, Any]:
    """One fresh-process measurement (run in a child)."""
    started = time.perf_counter()
    from langchain_core.messages import AIMessage, HumanMessage  # noqa: F401 - the floor's classes, imported as a reader would

    imported = time.perf_counter() - started
    with _saver(backend, target) as saver:
        saver.get_tuple({"configurable": {"thread_id": "warm-up"}})  # connection and setup, not the read
        gc.collect()  # each timed part starts with nothing left for the collector (see the docstring)
        t0 = time.perf_counter()
        found = saver.get_tuple(THREAD)
        cold = time.perf_counter() - t0
    messages = found.checkpoint["channel_values"]["messages"]
    plain = [(type(m), m.content, m.id) for m in messages]
    gc.collect()
    t0 = time.perf_counter()
    built = [cls(content=content, id=mid) for cls, content, mid in plain]
    floor = time.perf_counter() - t0
    assert built == messages
    return {
        "messages": len(messages),
        "cold_ms": cold * 1e3,
        "floor_ms": floor * 1e3,
        "ratio": cold / floor,
        "import_ms": imported * 1e3,
    }


def _child(backend: str, target: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", backend, target], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _targets(backends: list[str], tmp: str) -> dict[str, str]:
    targets: dict[str, str] = {}
    if "sqlite" in backends:
        targets["sqlite"] = os.path.join(tmp, "cold.sqlite")
    if "postgres" in backends:
        schema = f"bench_cold_{uuid.uuid4().hex[:8]}"
        with _connect(PG_DSN) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in PG_DSN else "?"
        targets["postgres"] = f"{PG_DSN}{sep}options=-csearch_path%3D{schema}"
    return targets


def _drop(targets: dict[str, str]) -> None:
    if "postgres" in targets:
        schema = targets["postgres"].rsplit("%3D", 1)[1]
        with _connect(PG_DSN) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--child", nargs=2, metavar=("BACKEND", "TARGET"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(read(*args.child)))
        return
    report: dict[str, Any] = {"load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        targets = _targets(args.backends.split(","), tmp)
        try:
            for backend, target in targets.items():
                write(backend, target, args.turns)
                runs = [_child(backend, target) for _ in range(args.runs)]
                for run in runs:
                    print(
                        f"{backend:8} {run['messages']} messages: cold {run['cold_ms']:7.1f} ms, "
                        f"floor {run['floor_ms']:7.1f} ms, ratio {run['ratio']:.2f}",
                        file=sys.stderr,
                    )
                report[backend] = {
                    "median_ratio": statistics.median(r["ratio"] for r in runs),
                    "median_cold_ms": statistics.median(r["cold_ms"] for r in runs),
                    "median_floor_ms": statistics.median(r["floor_ms"] for r in runs),
                    "runs": runs,
                }
                print(
                    f"{backend}: median cold/floor = {report[backend]['median_ratio']:.2f} "
                    f"(cold {report[backend]['median_cold_ms']:.1f} ms, floor "
                    f"{report[backend]['median_floor_ms']:.1f} ms)",
                    file=sys.stderr,
                )
        finally:
            _drop(targets)
    report["load_after"] = os.getloadavg()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
