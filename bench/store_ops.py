"""Store operations side by side: plait and LangGraph, op by op, backend by backend.

    .venv/bin/python bench/store_ops.py [--rounds 5] [--seconds 0.3] [--backends memory,sqlite,postgres]
    .venv/bin/python bench/store_ops.py --callgrind      # instructions per op instead (memory, SQLite)

For each backend (``memory``: ``InMemoryStore``; ``sqlite``: ``SqliteStore`` /
``AsyncSqliteStore`` on a WAL file; ``postgres``: ``PostgresStore`` /
``AsyncPostgresStore`` on one connection each, in a schema of their own that is
dropped afterwards), each operation and each kind of caller, it reports ops/s of
plait (this interpreter) and of LangGraph (``--lg-python``) running the same
workload code, and their ratio.

Operations, on 1000 items in 20 namespaces ``("bench", "u<n>", "mem")``:
``put`` (overwrites an item), ``get``, ``search`` (a namespace, ``filter={"kind": "a"}``,
``limit=10``) and ``list`` (``list_namespaces(prefix=("bench",))``).

Callers: ``sync`` (one thread, sync API), ``threads`` (4 threads sharing the sync
store), ``async`` (sequential awaits), ``async32`` (32 concurrent coroutines), and
``threads>async`` (4 threads calling the sync methods of the async store, whose
event loop runs in its own thread; SQL backends only: LangGraph's InMemoryStore
has no loop).

Each implementation runs in a long-lived worker process per backend; the
coordinator asks them for one cell at a time, alternating which goes first, for
``--rounds`` rounds, and reports per-cell medians; the ratio is the median of
each round's ratio (the two cells of a round ran back to back, under the same
load: on this shared machine a PostgreSQL commit's fsync alone varies 10x over
seconds, which per-side medians do not cancel). Beside it: the worker process's
CPU time per operation (all its threads; for PostgreSQL the client side only),
a measure the waits for the disk do not blur. ``--callgrind`` runs each
worker once under ``valgrind --tool=callgrind`` and reports instructions per
operation of the ``sync`` cells (dumps taken around the timed loop), a measure the
busy machine does not disturb.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ITEMS, SPACES, THREADS, TASKS = 1000, 20, 4, 32
OPS = ("put", "get", "search", "list")
MODES = ("sync", "threads", "async", "async32", "threads>async")
DSN = "postgresql://postgres@127.0.0.1:5432/test"


# ---------------------------------------------------------------------------- worker


def _ns(j: int) -> tuple[str, ...]:
    return ("bench", f"u{j % SPACES}", "mem")


def _value(j: int) -> dict[str, Any]:
    return {"i": j, "kind": "a" if j % 2 else "b", "text": f"memory number {j}"}


def _sync_op(store: Any, op: str) -> Callable[[int], Any]:
    if op == "put":
        return lambda j: store.put(_ns(j), f"k{j % ITEMS}", _value(j))
    if op == "get":
        return lambda j: store.get(_ns(j), f"k{j % ITEMS}")
    if op == "search":
        return lambda j: store.search(_ns(j)[:2], filter={"kind": "a"}, limit=10)
    return lambda j: store.list_namespaces(prefix=("bench",), limit=100)


def _async_op(store: Any, op: str) -> Callable[[int], Coroutine[Any, Any, Any]]:
    if op == "put":
        return lambda j: store.aput(_ns(j), f"k{j % ITEMS}", _value(j))
    if op == "get":
        return lambda j: store.aget(_ns(j), f"k{j % ITEMS}")
    if op == "search":
        return lambda j: store.asearch(_ns(j)[:2], filter={"kind": "a"}, limit=10)
    return lambda j: store.alist_namespaces(prefix=("bench",), limit=100)


def _check(impl: str, store: Any, name: str) -> None:
    module = type(store).__module__
    if not module.startswith(f"{impl}."):
        raise SystemExit(f"{name} came from {module}, not {impl}")


def _stores(impl: str, backend: str, folder: str, dsn: str) -> tuple[Any, Any]:
    """(context manager of the sync store, async context manager of the async store) for ``backend``."""
    if impl == "plait":
        sys.path.insert(0, str(ROOT))
    if backend == "memory":
        memory = __import__(f"{impl}.store.memory", fromlist=["InMemoryStore"])
        store = memory.InMemoryStore()
        return _Given(store), _Given(store)
    if backend == "sqlite":
        sync = __import__(f"{impl}.store.sqlite", fromlist=["SqliteStore"]).SqliteStore
        aio = __import__(f"{impl}.store.sqlite.aio", fromlist=["AsyncSqliteStore"]).AsyncSqliteStore
        path = os.path.join(folder, f"{impl}.db")
        return sync.from_conn_string(path), aio.from_conn_string(path)
    sync = __import__(f"{impl}.store.postgres", fromlist=["PostgresStore"]).PostgresStore
    aio = __import__(f"{impl}.store.postgres.aio", fromlist=["AsyncPostgresStore"]).AsyncPostgresStore
    return sync.from_conn_string(dsn), aio.from_conn_string(dsn)


class _Given:
    """A (sync and async) context manager that yields a store made beforehand."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __enter__(self) -> Any:
        return self.store

    def __exit__(self, *_: object) -> None:
        return None

    async def __aenter__(self) -> Any:
        return self.store

    async def __aexit__(self, *_: object) -> None:
        return None


class Worker:
    """One implementation's stores for one backend: a sync store, and an async one on a loop thread."""

    def __init__(self, impl: str, backend: str, folder: str, dsn: str) -> None:
        sync_cm, async_cm = _stores(impl, backend, folder, dsn)
        self.backend = backend
        self.sync = sync_cm.__enter__()
        self._sync_cm = sync_cm
        _check(impl, self.sync, "the sync store")
        if hasattr(self.sync, "setup"):
            self.sync.setup()
        self.sync.batch(
            [
                __import__(f"{impl}.store.base", fromlist=["PutOp"]).PutOp(_ns(j), f"k{j}", _value(j))
                for j in range(ITEMS)
            ]
        )
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._closed = asyncio.Event()
        self.aio: Any = self._call(self._open_async(async_cm))

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def _open_async(self, async_cm: Any) -> Any:
        opened: asyncio.Future[Any] = self.loop.create_future()

        async def hold() -> None:
            async with async_cm as store:
                if self.backend != "memory":
                    await store.setup()
                opened.set_result(store)
                await self._closed.wait()

        self._holder = self.loop.create_task(hold())
        return await opened

    def close(self) -> None:
        async def stop() -> None:
            self._closed.set()
            await self._holder

        self._call(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self._sync_cm.__exit__(None, None, None)

    def cell(self, mode: str, op: str, seconds: float) -> float:
        """Ops per second of ``op`` called by ``mode`` callers for about ``seconds``."""
        if mode == "sync":
            return _timed_threads(_sync_op(self.sync, op), 1, seconds)
        if mode == "threads":
            return _timed_threads(_sync_op(self.sync, op), THREADS, seconds)
        if mode == "threads>async":
            return _timed_threads(_sync_op(self.aio, op), THREADS, seconds)
        tasks = 1 if mode == "async" else TASKS
        return float(self._call(_timed_tasks(_async_op(self.aio, op), tasks, seconds)))

    def count(self, op: str, n: int) -> None:
        """``n`` sync calls of ``op`` between two callgrind dumps (``os.getppid`` marks them)."""
        call = _sync_op(self.sync, op)
        for j in range(200):  # warm
            call(j)
        os.getppid()
        for j in range(n):
            call(j)
        os.getppid()


def _timed_threads(call: Callable[[int], Any], threads: int, seconds: float) -> float:
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    deadline = [0.0]

    def run(t: int) -> None:
        start.wait()
        j, end = t * 7919, deadline[0]
        while True:
            for _ in range(8):
                call(j)
                j += 1
            counts[t] += 8
            if time.perf_counter() >= end:
                return

    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.wait()
    for thread in pool:
        thread.join()
    return sum(counts) / (time.perf_counter() - began)


async def _timed_tasks(call: Callable[[int], Coroutine[Any, Any, Any]], tasks: int, seconds: float) -> float:
    counts = [0] * tasks
    began = time.perf_counter()
    end = began + seconds

    async def run(t: int) -> None:
        j = t * 7919
        while True:
            for _ in range(8):
                await call(j)
                j += 1
            counts[t] += 8
            if time.perf_counter() >= end:
                return

    await asyncio.gather(*(run(t) for t in range(tasks)))
    return sum(counts) / (time.perf_counter() - began)


def serve(impl: str, backend: str, folder: str, dsn: str, count: int) -> None:
    """Answer cell requests read from stdin, one JSON line each; or (``count``) run the callgrind script."""
    worker = Worker(impl, backend, folder, dsn)
    try:
        if count:
            for op in OPS:
                worker.count(op, count)
            return
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            ask = json.loads(line)
            cpu, wall = time.process_time(), time.perf_counter()
            rate = worker.cell(ask["mode"], ask["op"], ask["seconds"])
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(json.dumps({"rate": rate, "cpu_us": cpu / (rate * wall) * 1e6}), flush=True)
    finally:
        worker.close()


# ---------------------------------------------------------------------------- coordinator


def _modes(backend: str) -> list[str]:
    return [m for m in MODES if not (backend == "memory" and m == "threads>async")]


def _schemas(impls: list[str]) -> dict[str, str]:
    import psycopg

    tag = uuid.uuid4().hex[:8]
    names = {impl: f"bench_store_{tag}_{impl}" for impl in impls}
    with psycopg.connect(DSN, autocommit=True) as conn:
        for name in names.values():
            conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[arg-type]  # a generated identifier
    return names


def _drop(names: dict[str, str]) -> None:
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        for name in names.values():
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")  # type: ignore[arg-type]


def _start(python: str, impl: str, backend: str, folder: str, dsn: str) -> subprocess.Popen[str]:
    cmd = [python, __file__, "--worker", impl, "--backend", backend, "--folder", folder, "--dsn", dsn]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # noqa: S603
    assert proc.stdout is not None  # noqa: S101
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"{impl} {backend} worker failed to start")
    return proc


def _ask(proc: subprocess.Popen[str], mode: str, op: str, seconds: float) -> tuple[float, float]:
    """A cell's ops/s and the worker process's CPU time per op (µs, all its threads)."""
    assert proc.stdin is not None and proc.stdout is not None  # noqa: S101
    proc.stdin.write(json.dumps({"mode": mode, "op": op, "seconds": seconds}) + "\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    return float(answer["rate"]), float(answer["cpu_us"])


def measure(  # noqa: PLR0913 - what to measure, and how long
    pythons: dict[str, str],
    backends: list[str],
    rounds: int,
    seconds: float,
    modes: list[str] | None = None,
    ops: list[str] | None = None,
) -> dict[str, Any]:
    """Per backend, interleaved rounds of every cell; returns {backend: {mode: {op: {impl: [rates]}}}}."""
    results: dict[str, Any] = {}
    schemas = _schemas(list(pythons)) if "postgres" in backends else {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for backend in backends:
                procs = {
                    impl: _start(python, impl, backend, folder, _dsn(schemas.get(impl)))
                    for impl, python in pythons.items()
                }
                table: dict[str, Any] = results.setdefault(backend, {})
                try:
                    for r in range(rounds):
                        for mode in [m for m in _modes(backend) if not modes or m in modes]:
                            for op in [o for o in OPS if not ops or o in ops]:
                                order = list(procs) if r % 2 == 0 else list(reversed(procs))
                                for impl in order:
                                    rate, cpu = _ask(procs[impl], mode, op, seconds)
                                    cell = table.setdefault(mode, {}).setdefault(op, {})
                                    cell.setdefault(impl, []).append(rate)
                                    cell.setdefault(f"{impl}_cpu", []).append(cpu)
                        print(f"  {backend}: round {r + 1}/{rounds} done", file=sys.stderr)
                finally:
                    for proc in procs.values():
                        assert proc.stdin is not None  # noqa: S101
                        proc.stdin.close()
                        proc.wait(60)
    finally:
        if schemas:
            _drop(schemas)
    return results


def _dsn(schema: str | None) -> str:
    return f"{DSN}?options=-csearch_path%3D{schema}" if schema else DSN


def callgrind(pythons: dict[str, str], backends: list[str], n: int) -> dict[str, Any]:
    """Instructions per sync op, per backend/op/impl (one valgrind run per worker)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for backend in [b for b in backends if b != "postgres"]:
            for impl, python in pythons.items():
                prefix = os.path.join(folder, f"cg-{impl}-{backend}")
                cmd = [
                    "valgrind",
                    "--tool=callgrind",
                    "--dump-before=getppid",
                    f"--callgrind-out-file={prefix}.%p",
                    python,
                    __file__,
                    "--worker",
                    impl,
                    "--backend",
                    backend,
                    "--folder",
                    folder,
                    "--count",
                    str(n),
                ]
                subprocess.run(cmd, check=True, capture_output=True)  # noqa: S603
                dumps = sorted(glob.glob(f"{prefix}.*.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
                totals = [_total(p) for p in dumps]
                # dump k (1-based) is taken on entering getppid: dumps 2, 4, ... hold the timed loops
                per_op = [totals[i] / n for i in range(1, 2 * len(OPS), 2)]
                for op, value in zip(OPS, per_op, strict=True):
                    out.setdefault(backend, {}).setdefault(op, {})[impl] = value
    return out


def _total(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise ValueError(f"no totals in {path}")


def report(results: dict[str, Any], impls: list[str]) -> str:
    """A markdown table: medians, and plait ÷ LangGraph."""
    lines = [
        "| backend | caller | op | plait ops/s | LangGraph ops/s | plait ÷ LangGraph | CPU µs/op plait / LangGraph |",
        "|---|---|---|---|---|---|---|",
    ]
    for backend, modes in results.items():
        for mode, ops in modes.items():
            for op, rates in ops.items():
                med = {impl: statistics.median(rates[impl]) for impl in impls if impl in rates}
                ratio = (  # paired: each round's two cells ran back to back, under the same load
                    statistics.median(
                        p / lg for p, lg in zip(rates["plait"], rates["langgraph"], strict=True)
                    )
                    if len(med) == 2
                    else float("nan")
                )
                cells = " | ".join(f"{med[i]:,.0f}" if i in med else "n/a" for i in ("plait", "langgraph"))
                cpu = " / ".join(
                    f"{statistics.median(rates[f'{i}_cpu']):,.0f}" if f"{i}_cpu" in rates else "n/a"
                    for i in ("plait", "langgraph")
                )
                lines.append(f"| {backend} | {mode} | {op} | {cells} | {ratio:.2f}× | {cpu} |")
    return "\n".join(lines)


def report_callgrind(results: dict[str, Any]) -> str:
    """A markdown table of instructions per op; ratio = LangGraph ÷ plait (higher: plait cheaper)."""
    lines = [
        "| backend | op | plait instr/op | LangGraph instr/op | LangGraph ÷ plait |",
        "|---|---|---|---|---|",
    ]
    for backend, ops in results.items():
        for op, per in ops.items():
            ratio = per["langgraph"] / per["plait"]
            lines.append(
                f"| {backend} | {op} | {per['plait']:,.0f} | {per['langgraph']:,.0f} | {ratio:.2f}× |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lg-python", default="/tmp/lgref/bin/python")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3, help="per cell and round")
    parser.add_argument("--backends", default="memory,sqlite,postgres")
    parser.add_argument("--modes", help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--ops", help=f"comma-separated subset of {','.join(OPS)}")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--n", type=int, default=500, help="ops per callgrind count")
    parser.add_argument("--json")
    parser.add_argument("--worker", choices=["plait", "langgraph"])
    parser.add_argument("--backend")
    parser.add_argument("--folder")
    parser.add_argument("--dsn", default=DSN)
    parser.add_argument("--count", type=int, default=0)
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, args.backend, args.folder, args.dsn, args.count)
        return
    pythons = {"plait": sys.executable, "langgraph": args.lg_python}
    backends = args.backends.split(",")
    if args.callgrind:
        found = callgrind(pythons, backends, args.n)
        print(report_callgrind(found))
    else:
        found = measure(
            pythons,
            backends,
            args.rounds,
            args.seconds,
            args.modes.split(",") if args.modes else None,
            args.ops.split(",") if args.ops else None,
        )
        print(report(found, list(pythons)))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
