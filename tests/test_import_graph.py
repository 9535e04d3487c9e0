"""The import graph of ``plait``: no hidden imports, no cycles, and the layers of the style guide.

Layers, lowest first (a module imports its own layer and lower ones only)::

    core      constants, errors, warnings, _context, types, runtime, config
    base      _schema, channels, checkpoint.base / _config / _calls / serde / _allow / _deflate / _ext, store.base / _ops / _paths
    runtime   pregel
    builder   graph
    top       backends (the other checkpoint modules, store.memory), the memory toolkit, cli

On top of that: backends import only core, base and other backend modules;
nothing outside ``plait.cli`` imports ``plait.cli``.

Imports of ``plait`` modules are read with :mod:`ast`, at module level (including
``try``/``if`` blocks), under ``if TYPE_CHECKING:`` and inside function bodies.
Third-party modules are not looked at: an optional dependency may be imported
lazily on purpose.
"""

from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "plait"


def _name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_name(path): path for path in sorted(PKG.rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    where: str  # "module", "type_checking" or "function"
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.where}, {MODULES[self.source].relative_to(ROOT)}:{self.line})"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = _resolve(module, node)
    # ``from package import submodule`` imports the submodule; ``from module import name`` the module
    return sorted(
        {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names}
    )


def _collect(module: str, node: ast.AST, where: str, out: list[Import]) -> None:
    for child in ast.iter_child_nodes(node):
        inner = where
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = "function"
        elif (
            where == "module"
            and isinstance(node, ast.If)
            and _is_type_checking(node.test)
            and any(child is stmt for stmt in node.body)
        ):
            inner = "type_checking"
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            out.extend(
                Import(module, target, inner, child.lineno)
                for target in _targets(module, child)
                if target == "plait" or target.startswith("plait.")
            )
        _collect(module, child, inner, out)


def _imports() -> list[Import]:
    out: list[Import] = []
    for module, path in MODULES.items():
        _collect(module, ast.parse(path.read_text(), str(path)), "module", out)
    return out


IMPORTS = _imports()


# -- (a) no plait module is imported inside a function --------------------------------------------------

LOCAL_IMPORTS_ALLOWED = {
    # On purpose: plait.checkpoint.postgres needs the 'postgres' extra (psycopg), imported only for a
    # postgresql:// DSN.
    ("plait.cli.inspect", "plait.checkpoint.postgres"),
}


def test_no_plait_import_inside_a_function() -> None:
    local = sorted(
        str(i) for i in IMPORTS if i.where == "function" and (i.source, i.target) not in LOCAL_IMPORTS_ALLOWED
    )
    assert local == [], "import plait modules at module level (a cycle is fixed by moving code down a layer)"


def test_local_import_allow_list_is_current() -> None:
    found = {(i.source, i.target) for i in IMPORTS if i.where == "function"}
    assert LOCAL_IMPORTS_ALLOWED - found == set(), "an allowed local import is gone: drop it from the list"


# -- (b) the module-level import graph is a DAG --------------------------------------------------------


def _graph(kinds: tuple[str, ...]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for i in IMPORTS:
        if i.where in kinds and i.target in MODULES and i.target != i.source:
            graph[i.source].add(i.target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (its modules in import order, the first one repeated last), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_module_level_imports_have_no_cycle() -> None:
    cycle = _cycle(_graph(("module",)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_imports_have_no_cycle_even_with_the_allowed_local_ones() -> None:
    cycle = _cycle(_graph(("module", "function")))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_cycle_even_counting_type_checking_imports() -> None:
    """An import under ``if TYPE_CHECKING:`` is a dependency too: a helper that needs a few things of
    a bigger class takes a ``Protocol`` of them (``_pause.PausedRun``), not the class."""
    cycle = _cycle(_graph(("module", "function", "type_checking")))
    assert cycle is None, "import cycle (TYPE_CHECKING imports counted): " + " -> ".join(cycle or [])


def test_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


# -- (c) layers -----------------------------------------------------------------------------------------

CORE, BASE, RUNTIME, BUILDER, TOP = range(5)
_EXACT = {
    "plait": CORE,
    "plait.constants": CORE,
    "plait.errors": CORE,
    "plait._context": CORE,
    "plait._snapshot": CORE,
    "plait._stream_parts": CORE,
    "plait._trace": CORE,
    "plait._internal": CORE,  # the package itself imports nothing
    "plait._internal._constants": CORE,
    "plait._internal._narrow": CORE,  # type guards, imports nothing
    "plait._internal._runnable": TOP,  # LangGraph's RunnableCallable, for code written on LangGraph
    "plait.types": CORE,
    "plait.runtime": CORE,
    "plait.config": CORE,
    "plait.typing": CORE,
    "plait.warnings": CORE,
    "plait._schema": BASE,
    "plait.checkpoint": BASE,
    "plait.checkpoint.base": BASE,
    "plait.checkpoint._config": BASE,
    "plait.checkpoint._locks": BASE,
    "plait.checkpoint._make": BASE,
    "plait.checkpoint._types": BASE,
    "plait.checkpoint._direct_async": BASE,
    "plait.checkpoint.serde": BASE,
    "plait.checkpoint._allow": BASE,
    "plait.checkpoint._deflate": BASE,
    "plait.checkpoint._ext": BASE,
    "plait.checkpoint._calls": BASE,
    "plait.checkpoint._task_ids": BASE,
    "plait.store.base": BASE,
    "plait.store._ops": BASE,
    "plait.store._paths": BASE,
    "plait.cache.base": BASE,
    "plait.pregel.remote": TOP,  # a client of an agent server, not part of the runtime
    "plait.pregel._remote_stream": TOP,
    "plait.pregel._remote_wire": TOP,
}
_TREES = {
    "plait.checkpoint.serde": BASE,  # before plait.checkpoint: the codec is the base layer
    "plait.channels": BASE,
    "plait._internal": BASE,
    "plait.managed": BASE,
    "plait.pregel": RUNTIME,
    "plait.stream": RUNTIME,
    "plait.graph": BUILDER,
    "plait.func": BUILDER,
    "plait.checkpoint": TOP,
    "plait.store": TOP,
    "plait.cache": TOP,
    "plait.memory": TOP,
    "plait.prebuilt": TOP,
    "plait.agents": TOP,
    "plait.server": TOP,
    "plait.cli": TOP,
    "plait.utils": TOP,
    "plait._alias": TOP,
    "plait.as_langgraph": TOP,
}
BACKENDS = ("plait.checkpoint", "plait.store", "plait.cache")  # their modules outside the base layer
NAMES = ["core", "base", "runtime (pregel)", "builder (graph)", "top"]


def _in(module: str, tree: str) -> bool:
    return module == tree or module.startswith(tree + ".")


def layer(module: str) -> int:
    if module in _EXACT:
        return _EXACT[module]
    return next(rank for tree, rank in _TREES.items() if _in(module, tree))


def _is_backend(module: str) -> bool:
    return layer(module) == TOP and any(_in(module, tree) for tree in BACKENDS)


def _executed(source: str, target: str) -> list[str]:
    """What ``source`` importing ``target`` runs: the packages of ``target`` first (``plait.a.b``: plait,
    plait.a, plait.a.b), except those of ``source`` itself (already imported when it runs)."""
    parts = target.split(".")
    chain = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
    return [m for m in chain if m in MODULES and (m == target or not _in(source, m))]


# Known exceptions, each with the edit that removes it.
LAYER_EXCEPTIONS: set[tuple[str, str]] = set()


def _layer_violations() -> list[tuple[Import, str]]:
    found = []
    for i in IMPORTS:
        for target in _executed(i.source, i.target):
            if (i.source, target) in LAYER_EXCEPTIONS:
                continue
            if layer(target) > layer(i.source):
                found.append((i, f"{NAMES[layer(i.source)]} imports {NAMES[layer(target)]} ({target})"))
            elif _is_backend(i.source) and not (layer(target) <= BASE or _is_backend(target)):
                found.append((i, f"a backend imports more than the base layer ({target})"))
            elif _in(target, "plait.cli") and not _in(i.source, "plait.cli"):
                found.append((i, "only plait.cli imports plait.cli"))
    return found


def test_every_module_has_a_layer() -> None:
    assert {module: layer(module) for module in MODULES}


def test_layers_are_respected() -> None:
    bad = sorted(f"{i}: {why}" for i, why in _layer_violations())
    assert bad == []


def test_runtime_never_imports_the_builder() -> None:
    bad = sorted(str(i) for i in IMPORTS if _in(i.source, "plait.pregel") and _in(i.target, "plait.graph"))
    assert bad == []


def test_layer_exceptions_are_current() -> None:
    found = {(i.source, t) for i in IMPORTS for t in _executed(i.source, i.target)}
    assert LAYER_EXCEPTIONS - found == set()


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("plait.types", CORE),
        ("plait.channels.binop", BASE),
        ("plait.checkpoint.serde", BASE),
        ("plait.checkpoint.memory", TOP),
        ("plait.checkpoint.sqlite._saver", TOP),
        ("plait.pregel._loop", RUNTIME),
        ("plait.graph.message", BUILDER),
        ("plait.store.memory", TOP),
        ("plait.cli.demo", TOP),
    ],
)
def test_layer_of(module: str, expected: int) -> None:
    assert layer(module) == expected


# -- the task context has one owner ---------------------------------------------------------------------


def test_task_context_has_one_owner() -> None:
    import plait._context
    import plait.pregel._context

    assert getattr(plait.pregel._context, "_TASK", plait._context.TASK_CONTEXT) is plait._context.TASK_CONTEXT
