"""Generate plait's sync code from its async code: one source for every sync/async pair.

As httpcore does, the async code is the only hand-written copy; the sync code is made from it
by rewriting tokens with the ``unasync`` library (``async``/``await`` dropped, ``async with`` ->
``with``, ``AsyncIterator`` -> ``Iterator``, ...) plus plait's own rules below (``aget`` -> ``get``,
``asyncio.sleep`` -> ``time.sleep``, ...), then formatted with ruff.

Two layouts:

* **Regions** (a class or module that needs both forms, e.g. ``BaseStore.get``/``aget``): the async
  code sits between the marker comments ``# >>> async source`` and ``# <<< async source``; the sync
  code is written right after it, between ``# >>> generated sync`` and ``# <<< generated sync``, in the
  same class and module (so import paths and the public API stay as they were).
* **Files** (a whole module pair, httpcore's ``_async/`` -> ``_sync/``): :data:`FILES` maps an async
  module to the sync module made from it.

What the async and sync forms must do differently (the I/O primitives: a lock wait, a thread pool
against ``asyncio.gather``, an async user function refused or awaited) stays hand-written, as small
named pairs in one module, :data:`PRIMITIVES` (httpcore's ``_synchronization.py``), which the async
source calls through :data:`NAMES` (``asyncio.sleep`` -> ``time.sleep`` is a rewrite below); everything
else is generated. An async method that only hands the call to its sync twin (LangGraph's default
``aput``: ``put`` in a worker thread) is delegation, not a second copy.
A few lines only the async form has (a sync backend's async method handing the whole call to a
worker thread, which in the sync form would call itself) sit between ``# >>> async only`` and
``# <<< async only`` inside the source; the sync form leaves them out.
A few lines only the sync form has (a sync-only fast path that must cost no extra call, such as the
plain run of ``GraphRunnable.invoke``) sit, commented out (``# `` before each line), between
``# >>> sync only`` and ``# <<< sync only``; the sync form has them uncommented.

Usage::

    .venv/bin/python tools/unasync_gen.py          # rewrite the generated code
    .venv/bin/python tools/unasync_gen.py --check  # exit 1 if any generated code is stale
    .venv/bin/python tools/unasync_gen.py --twins plait/store  # the sync/async pairs still hand-written

``tests/test_generated_sync.py`` runs the check.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
import subprocess
import sys
import textwrap

import tokenize_rt
import unasync

ROOT = pathlib.Path(__file__).resolve().parents[1]

SOURCE_BEGIN = "# >>> async source"
SOURCE_END = "# <<< async source"
GENERATED_BEGIN = "# >>> generated sync"
GENERATED_END = "# <<< generated sync"
GENERATED_NOTE = "(made by tools/unasync_gen.py from the async source above -- do not edit)"

REGIONS: tuple[str, ...] = (
    "plait/pregel/_pregel.py",
    "plait/pregel/_threads_api.py",
    "plait/pregel/_entrypoint.py",
    "plait/pregel/_callable.py",
    "plait/pregel/_effects.py",
    "plait/pregel/_travel.py",
    "plait/store/_statement.py",
    "plait/store/_embed.py",
    "plait/store/base/__init__.py",
    "plait/store/memory.py",
    "plait/store/_sqlstore.py",
    "plait/store/_group.py",
    "plait/prebuilt/tool_node.py",
    "plait/prebuilt/_react.py",
    "plait/pregel/remote.py",
    "plait/pregel/_traced.py",
    "plait/pregel/_batch.py",
    "plait/pregel/_legacy_ns.py",
    "plait/pregel/_subgraphs.py",
    "plait/pregel/_cache.py",
    "plait/pregel/_update.py",
    "plait/pregel/_func_tasks.py",
    "plait/checkpoint/_lease.py",
    "plait/checkpoint/_lease_wait.py",
    "plait/checkpoint/_engine_ops.py",
    "plait/checkpoint/_engine.py",
    "plait/checkpoint/_engine_batch.py",
    "plait/checkpoint/postgres/_shallow.py",
    "plait/checkpoint/base.py",
    "plait/checkpoint/_direct_async.py",
    "plait/stream/_mux.py",
    "plait/stream/_lifecycle.py",
    "plait/stream/stream_channel.py",
    "plait/stream/_run.py",
    "plait/func.py",
    "plait/_internal/_runnable.py",
    "plait/graph/_runnable.py",
)
"""Modules holding ``# >>> async source`` regions."""

PRIMITIVES = "plait/_internal/_io_primitives.py"
"""The I/O primitives: what the two forms must do differently (threads / ``asyncio.gather``, a blocking
lock wait / a polled one, an async user function refused / awaited, ...), as small hand-written pairs
that the async sources call through :data:`NAMES`. The one module where a sync/async pair is not
generated (:func:`twins` leaves it out)."""

FILES: dict[str, str] = {
    "plait/store/postgres/_async_io.py": "plait/store/postgres/_sync_io.py",
}
"""Whole generated modules: async source module -> sync module."""

NAMES: dict[str, str] = {
    # the I/O primitives (plait/_internal/_io_primitives.py: the hand-written pairs)
    "arun_all": "run_all",
    "asettle_all": "settle_all",
    "acall_maybe_async": "call_maybe_async",
    "atake_lock": "take_lock",
    "aone_attempt": "one_attempt",
    "arun_in_context": "run_in_context",
    # the store's API (langgraph.store.base)
    "abatch": "batch",
    "aget": "get",
    "aput": "put",
    "asearch": "search",
    "adelete": "delete",
    "alist_namespaces": "list_namespaces",
    "_async_sweeper": "_sweeper",
    "_arun_op": "_run_op",
    "_arun_prepared": "_run_prepared",
    "_atransact": "_transact",
    "_arun_group": "_run_group",
    "_groups": "_threads",  # SqlStore: async call groups (Groups) -> those of threads (ThreadGroups)
    "adrive": "drive",
    "aembed": "embed",
    "aembed_documents": "embed_documents",
    "aembed_query": "embed_query",
    "_acall": "_call",
    # LangChain runnables and tools
    "ainvoke": "invoke",
    "afunc": "func",  # RunnableCallable's functions
    "get_async_callback_manager_for_config": "get_callback_manager_for_config",
    "_aexecute": "_execute",
    "_arun_one": "_run_one",
    "_awrap_tool_call": "_wrap_tool_call",
    "AsyncToolCallWrapper": "ToolCallWrapper",
    # create_react_agent
    "acall_model": "call_model",
    "astructured": "structured",
    "_aresolve": "_resolve",
    "_achoose": "_choose",
    # checkpoint leases
    "arun": "run",
    "ascope": "scope",
    "arelease": "release",
    "ahold": "hold",
    "_aacquire": "_acquire",
    "apoll": "poll",
    "atake_local": "take_local",
    "_LoopLease": "LocalLease",  # DirectAsync's process-local lease: taken on the loop / blocking
    # checkpoint savers (langgraph.checkpoint.base) and their engine
    "aget_tuple": "get_tuple",
    "alist": "list",
    "aput_writes": "put_writes",
    "adelete_thread": "delete_thread",
    "alease": "lease",
    "aprune": "prune",
    "_areclaim": "_reclaim",
    "_adrive": "_drive",
    "_aitems": "_items",
    "aiterate": "iterate",
    "arun_session": "run_session",
    "_ahold_saves": "_hold_saves",
    "_asave_many": "_save_many",
    "_APUTS": "_PUTS",
    # the graph API (langgraph.pregel), RemoteGraph's
    "aget_graph": "get_graph",
    "aget_state": "get_state",
    "aget_state_history": "get_state_history",
    "aupdate_state": "update_state",
    "abulk_update_state": "bulk_update_state",
    "astream": "stream",
    "_aclient": "_client",
    "_astate_or_none": "_state_or_none",
    # traced node runs (pregel/_traced.py)
    "_atraced": "_traced",
    "_aroute": "_route",
    "aend": "end",
    "afail": "fail",
    "_atap": "_tap",
    "_aone": "_one",
    "tap_output_aiter": "tap_output_iter",
    # subgraph state, node caches and state updates (pregel/_legacy_ns.py, _subgraphs.py, _cache.py, _update.py)
    # (awith_task_states, aread_snapshot, astate_here, aupdate_thread: with the compiled graph's below)
    "aresumed_config": "resumed_config",
    "arecall_task": "recall_task",
    "acache_task": "cache_task",
    "aset": "set",
    "amethod": "method",
    # functional-API task calls (pregel/_func_tasks.py)
    "afinish": "finish",
    "awaited": "settled",
    "_arun_call": "_run_call",
    "_aattempt_call": "_attempt_call",
    "_ON_LOOP": "_IN_THREAD",  # start_calls' is_async: True / False
    "acall_routers": "call_routers",
    # the compiled graph (plait.pregel._pregel, _threads_api) and its drivers
    "ainvoke_streaming": "invoke_streaming",
    "ainvoke_here": "invoke_here",
    "aget_subgraphs": "get_subgraphs",
    "aupdate_here": "update_here",
    "aclear_cache": "clear_cache",
    "aclear": "clear",
    "arun_nested": "run_nested",
    "run_async": "run_sync",
    "aclosing": "closing",
    "asave": "save",
    "aload_run": "load_run",
    "astate_here": "state_here",
    "awith_task_states": "with_task_states",
    "aread_snapshot": "read_snapshot",
    "aupdate_thread": "update_thread",
    # streaming (plait/stream): the event mux and its transformers
    "apush": "push",
    "aprocess": "process",
    "afinalize": "finalize",
    "aclose": "close",
    "_aon_terminal": "_on_terminal",
    "_acursor": "_cursor",
    "_amore": "_more",
    "astream_events_v3": "stream_events_v3",
    # the runnable face of a compiled graph (plait/graph/_runnable.py)
    "_astart": "_start",
    # typing and the standard library
    "AbstractAsyncContextManager": "AbstractContextManager",
    "AsyncIterator": "Iterator",
    "AsyncIterable": "Iterable",
    "AsyncGenerator": "Generator",
    "asynccontextmanager": "contextmanager",
}
"""Names rewritten token by token (on top of unasync's own: ``__aenter__``, ``AsyncIterator``, ...).

A name ``AsyncX`` (``X`` capitalised) not listed here becomes ``X``."""

BEFORE: tuple[tuple[str, str], ...] = (
    # an answer that may be awaitable is awaited; the sync code takes it as it is
    (r"(?m)^([ \t]*)if inspect\.isawaitable\((\w+)\):\n\1    \2 = await \2\n", ""),
    # a release that must finish even if the waiting task is cancelled: the sync code just calls it
    (r"await asyncio\.shield\((self\.arelease\([^()]*\))\)", r"\1"),
    # what only the async form does (e.g. a sync backend's hop to a worker thread): dropped
    (r"(?ms)^[ \t]*# >>> async only\n.*?^[ \t]*# <<< async only[ \t]*\n", ""),
)
"""Regular-expression rewrites applied to the async source before the tokens are rewritten."""

AFTER: tuple[tuple[str, str], ...] = (
    (r"(?m)^import asyncio$", "import threading\nimport time"),  # unused ones are dropped by ruff
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\basyncio\.Lock\b", "threading.Lock"),
    (r"\bAwaitable\[([^\[\]]+)\]", r"\1"),
    # ``async for x in xs: yield x`` (there is no ``yield from`` in an async generator)
    (r"(?m)^([ \t]*)for (\w+) in (.+):\n\1    yield \2\n", r"\1yield from \3\n"),
)
"""Regular-expression rewrites applied to the sync code after the tokens are rewritten."""


class _Rule(unasync.Rule):  # type: ignore[misc]  # unasync has no type hints
    """unasync's token rules, with :data:`NAMES`, and ``AsyncX`` -> ``X`` (not ``SyncX``)."""

    def __init__(self) -> None:
        super().__init__("/_async/", "/_sync/", additional_replacements=NAMES)

    def _unasync_name(self, name: str) -> str:
        if name in self.token_replacements:
            return str(self.token_replacements[name])
        if len(name) > 5 and name.startswith("Async") and name[5].isupper():
            return name[5:]
        return name


_FIELD = re.compile(r"\{[^{}]*\}")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _fstring_fields(rule: _Rule, token: tokenize_rt.Token) -> tokenize_rt.Token:
    """An f-string token with the names inside its ``{...}`` fields rewritten (unasync leaves them)."""
    prefix = token.src[: len(token.src) - len(token.src.lstrip("rRbBuUfF"))]
    if token.name != "STRING" or "f" not in prefix.lower():
        return token

    def field(match: re.Match[str]) -> str:
        return _NAME.sub(lambda name: rule._unasync_name(name.group()), match.group())

    return token._replace(src=_FIELD.sub(field, token.src))


_SYNC_ONLY = re.compile(r"(?ms)^([ \t]*)# >>> sync only\n(.*?)^[ \t]*# <<< sync only[ \t]*\n")


def _sync_only(match: re.Match[str]) -> str:
    """The commented-out lines of a ``# >>> sync only`` block, uncommented (at the marker's indent)."""
    indent = match.group(1)
    out: list[str] = []
    for line in match.group(2).splitlines(keepends=True):
        if line.strip() == "#":
            out.append("\n")
        elif line.startswith(indent + "# "):
            out.append(indent + line[len(indent) + 2 :])
        else:
            raise SystemExit(
                f"a '# >>> sync only' line is not commented out at the marker's indent: {line!r}"
            )
    return "".join(out)


def unasync_text(source: str) -> str:
    """The sync form of a piece of async code (not yet formatted)."""
    source = _SYNC_ONLY.sub(_sync_only, source)
    for pattern, replacement in BEFORE:
        source = re.sub(pattern, replacement, source)
    rule = _Rule()
    tokens = [
        _fstring_fields(rule, token) for token in rule._unasync_tokens(tokenize_rt.src_to_tokens(source))
    ]
    text = tokenize_rt.tokens_to_src(tokens)
    for pattern, replacement in AFTER:
        text = re.sub(pattern, replacement, text)
    return text


def _regions(path: str, text: str) -> str:
    """``text`` with every generated region made anew from the async source before it."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    found = False
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.strip() != SOURCE_BEGIN:
            continue
        found = True
        indent = line[: len(line) - len(line.lstrip())]
        start = i
        while i < len(lines) and lines[i].strip() != SOURCE_END:
            i += 1
        if i == len(lines):
            raise SystemExit(f"{path}: {SOURCE_BEGIN!r} without {SOURCE_END!r}")
        source = textwrap.dedent("".join(lines[start:i]))
        out.extend(lines[start : i + 1])
        i += 1
        # drop the previous generated region (and the blank lines before it)
        j = i
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j < len(lines) and lines[j].strip().startswith(GENERATED_BEGIN):
            while j < len(lines) and lines[j].strip() != GENERATED_END:
                j += 1
            if j == len(lines):
                raise SystemExit(f"{path}: {GENERATED_BEGIN!r} without {GENERATED_END!r}")
            i = j + 1
        sync = textwrap.indent(unasync_text(source), indent, lambda s: bool(s.strip()))
        out.append("\n")
        out.append(f"{indent}{GENERATED_BEGIN} {GENERATED_NOTE}\n")
        out.append(sync if sync.endswith("\n") else sync + "\n")
        out.append(f"{indent}{GENERATED_END}\n")
    if not found:
        raise SystemExit(f"{path}: no {SOURCE_BEGIN!r} region")
    return "".join(out)


def _ruff(path: str, text: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", path, "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0 and not done.stdout:
        raise SystemExit(f"ruff {args[0]} failed on the generated {path}:\n{done.stderr}")
    return done.stdout


def _format(path: str, text: str, *, imports: bool = False) -> str:
    """``text`` as ruff formats it (with the project's settings); with ``imports``, the unused
    imports dropped and the rest sorted first (a generated module imports what its source did)."""
    if imports:
        text = _ruff(path, text, "check", "--fix-only", "--select", "F401,I001", "--exit-zero")
    return _ruff(path, text, "format")


def expected() -> dict[str, str]:
    """Every generated module's text as it should be, by path (relative to the repository)."""
    want: dict[str, str] = {}
    for path in REGIONS:
        want[path] = _format(path, _regions(path, (ROOT / path).read_text()))
    for source, target in FILES.items():
        header = f"# Generated from {source} by tools/unasync_gen.py -- do not edit.\n"
        want[target] = _format(target, header + unasync_text((ROOT / source).read_text()), imports=True)
    return want


def _generated_lines(text: str) -> set[int]:
    """The line numbers (1-based) inside the generated regions of a module."""
    lines: set[int] = set()
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(GENERATED_BEGIN):
            inside = True
        elif line.strip() == GENERATED_END:
            inside = False
        elif inside:
            lines.add(number)
    return lines


def _sync_names(name: str) -> list[str]:
    """The names the sync twin of async function ``name`` may have."""
    found = [NAMES[name]] if name in NAMES else []
    found += [
        name[1:],
        name.replace("_a", "_", 1),
        name.replace("async_", "", 1),
        name.replace("_async", "", 1),
    ]
    return [n for n in found if n != name]


def twins(roots: tuple[str, ...] = ("plait",)) -> list[str]:
    """The hand-written sync/async twin pairs: a function ``x`` (more than 3 lines, not generated) and an
    async function ``ax`` (``_ax``, ``x_async``, or per :data:`NAMES`) in the same module or class.

    Not counted: the pairs of :data:`PRIMITIVES` (the one module where they belong), and an async
    function that delegates to its twin (its body calls ``x``: LangGraph's default ``aput`` running
    ``put`` in a worker thread, say), which holds no second copy of what ``x`` does."""
    generated_files = set(FILES.values())
    found: list[str] = []
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")) if (ROOT / root).is_dir() else [ROOT / root]:
            rel = str(path.relative_to(ROOT))
            if rel in generated_files or rel == PRIMITIVES:
                continue
            text = path.read_text()
            skip = _generated_lines(text)
            found += _scan(rel, ast.parse(text).body, "", skip)
    return found


def _delegates(node: ast.AsyncFunctionDef, sync_name: str) -> bool:
    """Whether the async function ``node`` only hands the work to its sync twin ``sync_name``: at most
    two statements (its docstring aside), which call ``sync_name(...)``, ``self.sync_name(...)`` or
    ``asyncio.to_thread(self.sync_name, ...)``. A longer body that also calls the twin (a fallback,
    say) still has its own copy of the work: a twin."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) > 2:
        return False
    for inner in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(inner, ast.Name) and inner.id == sync_name:
            return True
        if isinstance(inner, ast.Attribute) and inner.attr == sync_name:
            return True
    return False


def _scan(rel: str, body: list[ast.stmt], where: str, skip: set[int]) -> list[str]:
    found: list[str] = []
    defs = {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name, node in defs.items():
        if not isinstance(node, ast.AsyncFunctionDef):
            continue
        for candidate in _sync_names(name):
            sync = defs.get(candidate)
            if isinstance(sync, ast.FunctionDef):
                size = (sync.end_lineno or sync.lineno) - sync.lineno + 1
                if size > 3 and sync.lineno not in skip and not _delegates(node, candidate):
                    found.append(f"{rel}:{where}{candidate}/{name} ({size} lines)")
                break
    for node in body:
        if isinstance(node, ast.ClassDef):
            found += _scan(rel, node.body, f"{where}{node.name}.", skip)
    return found


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or, with ``--check``, verify) the sync code; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale generated code, change nothing")
    parser.add_argument("--twins", nargs="*", metavar="PATH", help="list the hand-written sync/async pairs")
    args = parser.parse_args(argv)
    if args.twins is not None:
        pairs = twins(tuple(args.twins) or ("plait",))
        print(*pairs, f"{len(pairs)} hand-written sync/async pairs", sep="\n")
        return 0
    stale: list[str] = []
    for path, text in expected().items():
        target = ROOT / path
        if target.exists() and target.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            target.write_text(text)
    if args.check and stale:
        print("stale generated sync code (run .venv/bin/python tools/unasync_gen.py):", *stale, sep="\n  ")
        return 1
    for path in [] if args.check else stale:
        print(f"regenerated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
