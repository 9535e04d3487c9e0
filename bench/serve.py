#!/usr/bin/env python
"""``plait serve`` under load through the official LangGraph SDK, beside ``langgraph dev``.

For each server it starts the process on a free port with a one-node graph, then measures

* **latency**: one client, ``runs.wait`` on its own thread, one run after another (p50, p99);
* **throughput**: ``--clients`` concurrent clients, each running ``runs.wait`` on its own thread,
  for ``--seconds`` seconds (runs/s).

Servers: ``plait serve`` on SQLite (one worker), on PostgreSQL with 1, 2 and 4 workers when
``--pg DSN`` is given (a private schema is created and dropped), and ``langgraph dev`` (its
in-memory runtime) when ``--langgraph PATH`` names its executable.

    .venv/bin/python bench/serve.py --pg postgresql://postgres@127.0.0.1:5432/test \\
        --langgraph /tmp/lgdev/bin/langgraph
    .venv/bin/python bench/serve.py --quick          # smoke test

Output: a markdown table on stdout, then one JSON document (also written to ``--json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client

GRAPH = """
from {pkg}.graph import END, START, MessagesState, StateGraph

def reply(state):
    return {{"messages": [("ai", "ok")]}}

graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply").add_edge("reply", END).compile()
"""
INPUT = {"messages": [{"role": "user", "content": "hi"}]}


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _project(
    root: Path,
    pkg: str,
    graph: str = GRAPH,
    graphs: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A project folder for ``pkg`` (``plait`` or ``langgraph``): ``graph`` (formatted with ``pkg``) as
    ``agent.py`` and a config naming ``graphs`` in it (by default its ``graph`` as ``agent``), with the
    ``extra`` keys."""
    folder = root / pkg
    folder.mkdir()
    (folder / "agent.py").write_text(graph.format(pkg=pkg))
    name = "plait.json" if pkg == "plait" else "langgraph.json"
    config = {"graphs": graphs or {"agent": "./agent.py:graph"}, "dependencies": ["."], **(extra or {})}
    (folder / name).write_text(json.dumps(config))
    return folder / name


def _start(cmd: list[str], cwd: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ok", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    _stop(proc)
    raise RuntimeError(f"{cmd[0]} did not answer on port {port}:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def _latency(url: str, runs: int) -> list[float]:
    client = get_client(url=url)
    tid = (await client.threads.create())["thread_id"]
    for _ in range(5):  # warm up
        await client.runs.wait(tid, "agent", input=INPUT)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await client.runs.wait(tid, "agent", input=INPUT)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _cpu_seconds(session: int) -> float:
    """CPU time (user + system) of every live process in the server's session (its workers included)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[3]) == session:  # field 6 of stat: the session id
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


async def _throughput(url: str, clients: int, seconds: float, session: int) -> tuple[float, float]:
    client = get_client(url=url, timeout=httpx.Timeout(120.0))
    threads = [(await client.threads.create())["thread_id"] for _ in range(clients)]
    for tid in threads:
        await client.runs.wait(tid, "agent", input=INPUT)
    done = 0
    stop_at = time.perf_counter() + seconds

    async def loop(tid: str) -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            await client.runs.wait(tid, "agent", input=INPUT)
            done += 1

    started, cpu = time.perf_counter(), _cpu_seconds(session)
    await asyncio.gather(*(loop(t) for t in threads))
    elapsed, cpu = time.perf_counter() - started, _cpu_seconds(session) - cpu
    return done / elapsed, cpu * 1000 / max(done, 1)


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _measure(name: str, url: str, session: int, args: argparse.Namespace) -> dict[str, Any]:
    lat = asyncio.run(_latency(url, args.latency_runs))
    rate, cpu_ms = asyncio.run(_throughput(url, args.clients, args.seconds, session))
    row = {
        "server": name,
        "runs_per_s": round(rate, 1),
        "server_cpu_ms_per_run": round(cpu_ms, 2),
        "p50_ms": round(statistics.median(lat), 2),
        "p99_ms": round(_pct(lat, 0.99), 2),
    }
    print(
        f"  {name}: {row['runs_per_s']} runs/s, {row['server_cpu_ms_per_run']} ms server CPU/run, p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms",
        file=sys.stderr,
    )
    return row


def _plait(root: Path, config: Path, db: str, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    port = _port()
    plait = str(Path(sys.executable).parent / "plait")
    cmd = [
        plait,
        "serve",
        "--config",
        str(config),
        "--port",
        str(port),
        "--db",
        db,
        "--workers",
        str(workers),
    ]
    proc = _start(cmd, config.parent, port, root / f"plait-{port}.log")
    try:
        kind = "PostgreSQL" if db.startswith("postgresql") else "SQLite"
        return _measure(
            f"plait serve, {kind}, {workers} worker(s)", f"http://127.0.0.1:{port}", proc.pid, args
        )
    finally:
        _stop(proc)


def _langgraph(root: Path, config: Path, args: argparse.Namespace) -> dict[str, Any]:
    port = _port()
    cmd = [args.langgraph, "dev", "--port", str(port), "--no-browser", "--no-reload", "--config", str(config)]
    proc = _start(cmd, config.parent, port, root / "langgraph-dev.log")
    try:
        return _measure("langgraph dev (in-memory)", f"http://127.0.0.1:{port}", proc.pid, args)
    finally:
        _stop(proc)


def _pg_schema(dsn: str) -> tuple[str, str]:
    import psycopg

    schema = f"plait_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in dsn else "?"
    return schema, f"{dsn}{sep}options=-csearch_path%3D{schema}"


def _drop(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pg", help="PostgreSQL DSN: also measure 1, 2 and 4 workers on it")
    parser.add_argument(
        "--langgraph", help="path of the `langgraph` CLI (langgraph-cli[inmem]) to compare with"
    )
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients for throughput")
    parser.add_argument("--seconds", type=float, default=15.0, help="duration of each throughput run")
    parser.add_argument("--latency-runs", type=int, default=200, help="sequential runs for p50/p99")
    parser.add_argument("--workers", default="1,2,4", help="worker counts on PostgreSQL")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--json", help="also write the JSON result here")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.seconds, args.latency_runs = 4, 2.0, 20
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = _project(root, "plait")
        if args.langgraph:
            rows.append(_langgraph(root, _project(root, "langgraph"), args))
        rows.append(_plait(root, config, str(root / "bench.sqlite"), 1, args))
        if args.pg:
            for workers in (int(w) for w in args.workers.split(",")):
                schema, dsn = _pg_schema(args.pg)
                try:
                    rows.append(_plait(root, config, dsn, workers, args))
                finally:
                    _drop(args.pg, schema)
    base = next((r["runs_per_s"] for r in rows if r["server"].startswith("langgraph")), None)
    print(
        "| server | runs/s | vs langgraph dev | server CPU ms/run | p50 ms | p99 ms |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    for r in rows:
        ratio = f"{r['runs_per_s'] / base:.1f}×" if base else "-"
        print(
            f"| {r['server']} | {r['runs_per_s']} | {ratio} | {r['server_cpu_ms_per_run']} "
            f"| {r['p50_ms']} | {r['p99_ms']} |"
        )
    result = {"clients": args.clients, "seconds": args.seconds, "cpus": os.cpu_count(), "rows": rows}
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
