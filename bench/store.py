"""Store benchmark: plait's SQLite/PostgreSQL stores side by side with LangGraph's.

    .venv/bin/python bench/store.py [--n 100000] [--lg-python /tmp/lgref/bin/python]

Measures, per store: put of 10 k items in batches of 500 (no index); loading N
384-dimension vectors; top-10 search latency (median of 100 queries) and recall@10
against an exact scan. PostgreSQL runs on a private pgvector server
(``tests/contract/_pgvector.py``), never the shared one. LangGraph runs in its own
interpreter (``--lg-python``); its SqliteStore needs sqlite-vec loaded, which this
interpreter's sqlite3 cannot do, so its SQLite vector search is reported as n/a.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DIMS, QUERIES, PUTS, BATCH = 384, 100, 10_000, 500


def make_data(n: int, folder: Path) -> None:
    """Clustered unit vectors (1000 centroids), queries near documents, and the exact top-10 of each."""
    import numpy as np

    rng = np.random.default_rng(7)
    centroids = rng.normal(size=(1000, DIMS)).astype(np.float32)
    docs = centroids[rng.integers(0, 1000, n)] + 0.6 * rng.normal(size=(n, DIMS)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    # a query is a document moved by noise of norm 0.3 (cosine ~0.96 to it)
    queries = docs[rng.integers(0, n, QUERIES)] + (0.3 / DIMS**0.5) * rng.normal(size=(QUERIES, DIMS)).astype(
        np.float32
    )
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    truth = [[int(i) for i in np.argsort(-(docs @ q))[:10]] for q in queries]
    (folder / "docs.f32").write_bytes(docs.astype("<f4").tobytes())
    (folder / "queries.f32").write_bytes(queries.astype("<f4").tobytes())
    (folder / "truth.json").write_text(json.dumps(truth))


def _load(path: Path) -> list[list[float]]:
    data = array.array("f")
    data.frombytes(path.read_bytes())
    flat = data.tolist()
    return [flat[i : i + DIMS] for i in range(0, len(flat), DIMS)]


def _embedder(docs: list[list[float]], queries: list[list[float]]) -> Any:
    def embed(texts: list[str]) -> list[list[float]]:
        return [(docs if t[0] == "d" else queries)[int(t[1:])] for t in texts]

    return embed


def _put_rate(store: Any, put_op: Any) -> float:
    start = time.perf_counter()
    for b in range(0, PUTS, BATCH):
        store.batch(
            [
                put_op(("bench", "put"), f"k{i}", {"i": i, "text": f"item {i}"}, False)
                for i in range(b, b + BATCH)
            ]
        )
    return PUTS / (time.perf_counter() - start)


def _search(store: Any, truth: list[list[int]]) -> tuple[float, float, float]:
    store.search(("docs",), query="q0", limit=10)  # warm caches
    times, hits = [], 0
    for j, want in enumerate(truth):
        start = time.perf_counter()
        found = store.search(("docs",), query=f"q{j}", limit=10)
        times.append((time.perf_counter() - start) * 1000)
        hits += len({int(h.key) for h in found} & set(want))
    return statistics.median(times), hits / (10 * len(truth)), max(times)


def _load_vectors(store: Any, put_op: Any, n: int, dsn: str | None = None) -> float:
    """Put ``n`` items with vectors in batches of 1000; on PostgreSQL the HNSW index is built after the load.

    Incremental HNSW inserts run at a few ms per vector on these shared cores; both
    implementations get the same treatment: drop the store's HNSW index, load, re-create it.
    """
    indexes = _drop_hnsw(dsn) if dsn else []
    start = time.perf_counter()
    for b in range(0, n, 1000):
        store.batch([put_op(("docs",), str(i), {"text": f"d{i}"}, None) for i in range(b, min(n, b + 1000))])
    if dsn:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET maintenance_work_mem = '512MB'")
            for definition in indexes:
                conn.execute(definition)
    return time.perf_counter() - start


def _drop_hnsw(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexdef ILIKE '%USING hnsw%'"
        ).fetchall()
        for name, _ in rows:
            conn.execute(f"DROP INDEX {name}")
    return [definition for _, definition in rows]


def worker(impl: str, folder: Path, pg: str, n: int) -> dict[str, Any]:
    """Run one implementation's measurements (in the interpreter that has it)."""
    if impl == "plait":
        sys.path.insert(0, str(ROOT))
        from plait.store.base import PutOp
        from plait.store.postgres import PostgresStore
        from plait.store.sqlite import SqliteStore
    else:
        from langgraph.store.base import PutOp
        from langgraph.store.postgres import PostgresStore
        from langgraph.store.sqlite import SqliteStore
    docs, queries = _load(folder / "docs.f32"), _load(folder / "queries.f32")
    truth = json.loads((folder / "truth.json").read_text())
    index = {"dims": DIMS, "embed": _embedder(docs, queries), "fields": ["text"]}
    out: dict[str, Any] = {}
    with SqliteStore.from_conn_string(str(folder / f"{impl}.db")) as store:
        store.setup()
        out["put_sqlite"] = _put_rate(store, PutOp)
    if impl == "plait" and n:
        with SqliteStore.from_conn_string(str(folder / f"{impl}-v.db"), index=index) as store:
            out["load_sqlite_s"] = _load_vectors(store, PutOp, n)
            out["search_sqlite"] = _search(store, truth)
    dsn = _database(pg)
    with PostgresStore.from_conn_string(dsn, index=index) as store:
        store.setup()
        out["put_pg"] = _put_rate(store, PutOp)
        if n:
            out["load_pg_s"] = _load_vectors(store, PutOp, n, dsn)
            out["search_pg"] = _search(store, truth)
    return out


def _database(dsn: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(dsn.rsplit("/", 1)[0] + "/" + name, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return dsn.rsplit("/", 1)[0] + "/" + name


def _fmt(result: dict[str, Any], key: str) -> str:
    value = result.get(key)
    if value is None:
        return "n/a"
    if isinstance(value, list):
        return f"{value[0]:.1f} ms (recall {value[1]:.3f}, max {value[2]:.0f} ms)"
    return f"{value:,.0f} items/s" if key.startswith("put") else f"{value:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="vectors to search (0: measure puts only)")
    parser.add_argument("--lg-python", default="/tmp/lgref/bin/python")
    parser.add_argument("--worker", choices=["plait", "langgraph"])
    parser.add_argument("--folder")
    parser.add_argument("--pg")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, Path(args.folder), args.pg, args.n)))
        return
    sys.path.insert(0, str(ROOT / "tests" / "contract"))
    import _pgvector

    server = _pgvector.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            os.chmod(folder, 0o755)
            make_data(max(args.n, 10), folder)
            results = {}
            for impl, python in (("plait", sys.executable), ("langgraph", args.lg_python)):
                cmd = [
                    python,
                    __file__,
                    "--worker",
                    impl,
                    "--folder",
                    tmp,
                    "--pg",
                    server.dsn,
                    "--n",
                    str(args.n),
                ]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                lines = done.stdout.strip().splitlines()
                results[impl] = (
                    json.loads(lines[-1]) if done.returncode == 0 and lines else {"error": done.stderr[-600:]}
                )
    finally:
        _pgvector.stop(server)
    print(f"| measure (n={args.n:,}, dims={DIMS}) | plait | LangGraph 1.2.24 |")
    print("|---|---|---|")
    for key, label in [
        ("put_sqlite", "SQLite put, 10k items in batches of 500"),
        ("put_pg", "PostgreSQL put, 10k items in batches of 500"),
        ("load_sqlite_s", "SQLite load of the vectors"),
        ("load_pg_s", "PostgreSQL load of the vectors, then the HNSW build"),
        ("search_sqlite", "SQLite top-10 search, median"),
        ("search_pg", "PostgreSQL top-10 search, median"),
    ]:
        print(f"| {label} | {_fmt(results['plait'], key)} | {_fmt(results['langgraph'], key)} |")
    for impl, result in results.items():
        if "error" in result:
            print(f"\n{impl} failed: {result['error']}")


if __name__ == "__main__":
    main()
