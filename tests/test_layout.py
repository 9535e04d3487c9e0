"""Structural rules of the code base."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "plait"
MODULES = sorted(PKG.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_at_most_500_lines(path: pathlib.Path) -> None:
    assert len(path.read_text().splitlines()) <= 500


def test_step_module_at_most_300_lines() -> None:
    assert len((PKG / "pregel" / "_step.py").read_text().splitlines()) <= 300


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                names.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                names.add(node.module)
    return names


RUNTIME = sorted([*(PKG / "pregel").rglob("*.py"), *(PKG / "channels").rglob("*.py")])


@pytest.mark.parametrize("path", RUNTIME, ids=lambda p: str(p.relative_to(ROOT)))
def test_runtime_never_imports_graph(path: pathlib.Path) -> None:
    bad = sorted(n for n in _imports(path) if n == "plait.graph" or n.startswith("plait.graph."))
    assert bad == []


def test_core_imports_do_not_load_optional_dependencies() -> None:
    code = (
        "import sys, plait.graph, plait.checkpoint.memory\n"
        "print(','.join(sorted(m for m in ('psycopg', 'psycopg_pool', 'click', 'rich') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


def test_every_package_directory_has_an_init_so_wheels_ship_it() -> None:
    root = pathlib.Path(__file__).resolve().parents[1] / "plait"
    missing = [
        str(d.relative_to(root.parent))
        for d in [root, *root.rglob("*")]
        if d.is_dir() and d.name != "__pycache__" and not (d / "__init__.py").exists()
    ]
    assert missing == []


PUBLIC_MODULES = [
    "plait.graph",
    "plait.graph.message",
    "plait.graph.state",
    "plait.types",
    "plait.errors",
    "plait.constants",
    "plait.config",
    "plait.runtime",
    "plait.pregel",
    "plait.channels",
    "plait.checkpoint.base",
    "plait.checkpoint.memory",
    "plait.checkpoint.serde",
    "plait.checkpoint.sqlite",
    "plait.checkpoint.sqlite.aio",
    "plait.checkpoint.postgres",
    "plait.checkpoint.postgres.aio",
    "plait.store.base",
    "plait.store.memory",
    "plait.memory",
    "plait.cli",
]


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_each_public_module_imports_first_in_a_fresh_process(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_no_two_test_modules_share_a_basename() -> None:
    # tests/ has no packages: pytest imports each test module by its basename, so a second one stops collection
    names = sorted(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert sorted(set(names)) == names
