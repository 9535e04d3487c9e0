#!/usr/bin/env python3
"""Run the public tests of ``langgraph-prebuilt`` against plait.

The tests ship in the ``langgraph-prebuilt`` sdist (the version that
``langgraph==1.2.24`` depends on).  This script downloads that sdist with pip
(checked against a pinned sha256), extracts its ``tests/`` into a cache, builds
a run tree (upstream's tests unchanged, except the checkpointer/store fixture
helpers, which are replaced by ``tools/prebuilt_shim/``) and runs pytest on it
with plait's interpreter.  ``langgraph`` is aliased to ``plait`` by the import
hook of ``../shared/lgtests/alias`` (strict: it never falls back to a real
langgraph).  The last line printed is ``N passed, M failed`` (``, K skipped``
when K > 0).

    .venv/bin/python tools/prebuilt_tests.py                 # everything
    .venv/bin/python tools/prebuilt_tests.py -k tool_node -v # a subset, with tracebacks
    .venv/bin/python tools/prebuilt_tests.py --impl langgraph --python /tmp/lgref/bin/python

A test file that cannot be imported counts as that many failures, using the
per-file test counts in ``tools/prebuilt_shim/counts-<version>.txt`` (written
by ``--write-counts`` from a collection on the real langgraph).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

from _sdist import SdistError, pip_target, python_tag, sdist_tests

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHIM = HERE / "prebuilt_shim"
DEFAULT_VERSION = "1.1.3"  # langgraph 1.2.24 requires langgraph-prebuilt>=1.1.3,<1.2
SHA256 = {"1.1.3": "7ee72332e925000e3d24d2d491dd0ebb9d3a44dbffe650185943b730a832cf6d"}
CACHE = Path(
    os.environ.get("PLAIT_PREBUILT_TESTS_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plait-prebuilt-tests"
)
LGTESTS = ROOT.parent / "shared" / "lgtests"
LGTESTS_CACHE = Path(
    os.environ.get("LGTESTS_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plait-lgtests"
)
SHIM_FILES = ("conftest_checkpointer.py", "conftest_store.py")
PYTEST_INI = """[pytest]
addopts = -p no:cacheprovider --strict-markers
"""


def _die(msg: str) -> None:
    raise SystemExit(f"prebuilt_tests: {msg}")


def fetch_tests(python: str, version: str) -> Path:
    """Download and extract the sdist's tests/ once; return the tests folder."""
    try:
        return sdist_tests(python, "langgraph_prebuilt", version, SHA256.get(version), CACHE)
    except SdistError as exc:
        _die(str(exc))
        raise


def tools_dir(python: str) -> Path:
    """The pinned pytest tools: lgtests' folder when present, else our own copy."""
    tag = python_tag(python)
    shared = LGTESTS_CACHE / "upstream" / "_tools" / tag
    if (shared / "xdist").is_dir() and (shared / "syrupy").is_dir():
        return shared
    own = CACHE / "_tools" / tag
    if not (own / "syrupy").is_dir():
        pip_target(python, own, LGTESTS / "requirements-tools.txt", (), _die)
    return own


def build_tree(tests: Path, keep: bool) -> Path:
    scratch = CACHE / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    tree = Path(tempfile.mkdtemp(prefix="tree-", dir=scratch))
    shutil.copytree(tests, tree / "tests")
    for name in SHIM_FILES:
        shutil.copy(SHIM / name, tree / "tests" / name)
    (tree / "pytest.ini").write_text(PYTEST_INI)
    return tree


def make_env(args: argparse.Namespace, tools: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGTESTS_")}
    for k in (
        "PYTHONPATH",
        "PYTEST_ADDOPTS",
        "PYTEST_PLUGINS",
        "LANGSMITH_TRACING",
        "LANGCHAIN_TRACING_V2",
        "LANGSMITH_API_KEY",
        "LANGCHAIN_API_KEY",
    ):
        env.pop(k, None)
    path = [str(tools)]
    if args.impl == "plait":
        alias = LGTESTS / "alias"
        if not (alias / "lgtests_alias.py").is_file():
            _die(f"no import alias at {alias}")
        path = [str(alias), str(ROOT), *path]
        env["LGTESTS_ALIAS"] = "langgraph=plait"
    env["PYTHONPATH"] = os.pathsep.join(path)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["LANGGRAPH_TEST_FAST"] = "true"
    return env


def pytest_cmd(args: argparse.Namespace, junit: Path) -> list[str]:
    paths = [a for a in args.pytest_args if a.startswith("tests/")] or ["tests"]
    extra = [a for a in args.pytest_args if not a.startswith("tests/")]
    cmd = [
        args.python,
        "-m",
        "pytest",
        *paths,
        "-p",
        "pytest_mock",
        "-p",
        "anyio.pytest_plugin",
        "-p",
        "syrupy",
        "-p",
        "pytest_timeout",
        "-p",
        "xdist.plugin",
        "--snapshot-warn-unused",
    ]
    if args.collect_only:
        return [*cmd, "--collect-only", "-q"]
    cmd += [
        "-n",
        str(max(1, args.jobs)),
        f"--timeout={args.timeout}",
        "--timeout-method=thread",
        "--max-worker-restart=100000",
        f"--junitxml={junit}",
        "-rN",
        "--disable-warnings",
    ]
    cmd += ["-v", "--tb=short"] if args.verbose else ["-q", "--tb=no"]
    if args.exitfirst:
        cmd.append("-x")
    if args.k:
        cmd += ["-k", args.k]
    return cmd + extra


def _file_of(classname: str) -> str:
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        if parts[i - 1].startswith("test_"):
            return "/".join(parts[:i]) + ".py"
    return classname.replace(".", "/") + ".py"


def parse_junit(junit: Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Return (outcome per test id, message per failing id, collection errors per file)."""
    outcome: dict[str, str] = {}
    message: dict[str, str] = {}
    collect: dict[str, str] = {}
    if not junit.is_file():
        return outcome, message, collect
    for case in ET.parse(junit).getroot().iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if not cls and bad is not None:  # a module that could not be collected
            collect[name.replace(".", "/") + ".py"] = bad.get("message") or "collection failure"
            continue
        fname = _file_of(cls)
        cls_part = cls[len(fname) - 3 :].lstrip(".")
        test_id = f"{fname}::{cls_part + '::' if cls_part else ''}{name}"
        if bad is not None:
            outcome[test_id] = "failed"
            message[test_id] = (bad.get("message") or "").splitlines()[0][:160] if bad.get("message") else ""
        elif case.find("skipped") is not None:
            outcome.setdefault(test_id, "skipped")
        else:
            outcome.setdefault(test_id, "passed")
    return outcome, message, collect


def read_counts(version: str) -> dict[str, int]:
    path = SHIM / f"counts-{version}.txt"
    if not path.is_file():
        return {}
    rows = (
        line.split() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")
    )
    return {f: int(n) for f, n in rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default=DEFAULT_VERSION, help="langgraph-prebuilt sdist version")
    ap.add_argument("--python", default=sys.executable, help="interpreter to run pytest with")
    ap.add_argument("--impl", choices=("plait", "langgraph"), default="plait")
    ap.add_argument("-k", help="pytest -k expression")
    ap.add_argument("-x", dest="exitfirst", action="store_true")
    ap.add_argument("-v", dest="verbose", action="store_true", help="tracebacks and per-test lines")
    ap.add_argument("-j", dest="jobs", type=int, default=1, help="xdist workers (default 1)")
    ap.add_argument("--timeout", type=int, default=60, help="per-test limit in seconds")
    ap.add_argument("--keep-tree", action="store_true")
    ap.add_argument("--collect-only", action="store_true")
    ap.add_argument(
        "--write-counts",
        action="store_true",
        help="with --collect-only: write tools/prebuilt_shim/counts-<version>.txt",
    )
    ap.add_argument(
        "pytest_args",
        nargs="*",
        help="test paths (tests/test_x.py[::name]) or extra pytest arguments (after --)",
    )
    args = ap.parse_args()

    tests = fetch_tests(args.python, args.version)
    tools = tools_dir(args.python)
    tree = build_tree(tests, args.keep_tree)
    junit = tree / "junit.xml"
    try:
        proc = subprocess.run(
            pytest_cmd(args, junit),
            cwd=tree,
            env=make_env(args, tools),
            capture_output=args.collect_only,
            text=True,
        )
        outcome, message, collect = parse_junit(junit)
    finally:
        if args.keep_tree:
            print(f"run tree kept at {tree}")
        else:
            shutil.rmtree(tree, ignore_errors=True)
    if args.collect_only:
        print(proc.stdout, end="")
        if args.write_counts:
            ids = [line for line in proc.stdout.splitlines() if "::" in line]
            per_file = Counter(t.split("::")[0] for t in ids)
            lines = [f"# tests per file of langgraph-prebuilt {args.version} (fast mode)"]
            lines += [f"{f} {n}" for f, n in sorted(per_file.items())]
            (SHIM / f"counts-{args.version}.txt").write_text("\n".join(lines) + "\n")
        return proc.returncode
    counts = read_counts(args.version)
    n_pass = sum(1 for o in outcome.values() if o == "passed")
    n_skip = sum(1 for o in outcome.values() if o == "skipped")
    failed: dict[str, list[str]] = defaultdict(list)
    for test_id, o in outcome.items():
        if o == "failed":
            failed[test_id.split("::")[0]].append(f"{test_id.split('::', 1)[1]}  {message.get(test_id, '')}")
    n_fail = sum(len(v) for v in failed.values())
    for fname, why in collect.items():
        n = counts.get(fname, 1) if not args.k else 1
        n_fail += n
        failed[fname].append(f"not collected ({n} tests): {why}")
    if failed:
        print("\nfailures by file:")
        for fname in sorted(failed):
            print(f"  {fname}: {len(failed[fname])}")
            for line in sorted(failed[fname]):
                print(f"    {line}")
    if not outcome and not collect:
        print(f"pytest produced no results (exit status {proc.returncode})")
        return proc.returncode or 1
    print(f"{n_pass} passed, {n_fail} failed" + (f", {n_skip} skipped" if n_skip else ""))
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
